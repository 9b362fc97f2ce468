//! Tokenizer shared by indexing and querying.
//!
//! Text is split into maximal runs of Unicode alphanumeric characters, so punctuation, whitespace,
//! `_`, `-`, `.` and `/` separate words (snake_case and kebab-case identifiers split for free).
//! Inside a run, camelCase and PascalCase boundaries split too: a lower-case letter followed by an
//! upper-case one (`getOrder` → `get` `order`), and a capitalised word that follows an acronym or a
//! digit (`HTTPServer` → `http` `server`, `EC2Instances` → `ec2` `instances`). Otherwise letters and
//! digits stay together (`ec2`, `s3`, `v2`).
//! Each piece is lower-cased; pieces shorter than two characters are dropped; a light English plural
//! rule then folds common plurals onto their singular (see [`strip_plural`]).

/// Tokens of `text`, in order, duplicates kept.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokenize_into(text, &mut out);
    out
}

/// Appends the tokens of `text` to `out`.
pub fn tokenize_into(text: &str, out: &mut Vec<String>) {
    let mut run: Vec<char> = Vec::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            run.push(c);
        } else if !run.is_empty() {
            split_run(&run, out);
            run.clear();
        }
    }
    if !run.is_empty() {
        split_run(&run, out);
    }
}

/// Splits one alphanumeric run at case boundaries and emits its normalised pieces.
fn split_run(run: &[char], out: &mut Vec<String>) {
    let mut start = 0;
    for i in 1..run.len() {
        if is_case_boundary(run, i) {
            emit(&run[start..i], out);
            start = i;
        }
    }
    emit(&run[start..], out);
}

/// True when a new word starts at `run[i]`.
fn is_case_boundary(run: &[char], i: usize) -> bool {
    let (prev, cur) = (run[i - 1], run[i]);
    if !cur.is_uppercase() {
        return false;
    }
    if prev.is_lowercase() {
        return true;
    }
    (prev.is_uppercase() || prev.is_numeric()) && run.get(i + 1).is_some_and(|n| n.is_lowercase())
}

fn emit(piece: &[char], out: &mut Vec<String>) {
    let word: String = piece.iter().collect::<String>().to_lowercase();
    if word.chars().count() < 2 {
        return;
    }
    out.push(strip_plural(word));
}

/// Light plural folding on lower-case words.
///
/// Words of fewer than three characters, and words ending in `ss`, `us` or `is` (`address`,
/// `status`, `analysis`) are kept. Otherwise `-ies` → `-y` (five characters or more), `-sses`,
/// `-xes`, `-ches`, `-shes` lose `es`, and any other final `s` is removed.
pub fn strip_plural(word: String) -> String {
    let n = word.chars().count();
    if n < 3 || !word.ends_with('s') {
        return word;
    }
    if ["ss", "us", "is"].iter().any(|s| word.ends_with(s)) {
        return word;
    }
    if n >= 5 && word.ends_with("ies") {
        return format!("{}y", &word[..word.len() - 3]);
    }
    if ["sses", "xes", "ches", "shes"]
        .iter()
        .any(|s| word.ends_with(s))
    {
        return word[..word.len() - 2].to_string();
    }
    word[..word.len() - 1].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Vec<String> {
        tokenize(s)
    }

    #[test]
    fn splits_snake_kebab_and_punctuation() {
        assert_eq!(
            t("order_status get-user.name/v2"),
            ["order", "status", "get", "user", "name", "v2"]
        );
    }

    #[test]
    fn splits_camel_and_pascal_case_and_acronyms() {
        assert_eq!(t("getOrderStatus"), ["get", "order", "status"]);
        assert_eq!(t("HTTPServerError"), ["http", "server", "error"]);
        assert_eq!(t("DescribeEC2Instances"), ["describe", "ec2", "instance"]);
    }

    #[test]
    fn lowercases_unicode_and_keeps_accented_letters() {
        assert_eq!(t("Café RÉSUMÉ"), ["café", "résumé"]);
    }

    #[test]
    fn drops_single_characters() {
        assert_eq!(t("a b cd e"), ["cd"]);
    }

    #[test]
    fn folds_plurals() {
        assert_eq!(
            t("orders policies boxes matches addresses"),
            ["order", "policy", "box", "match", "address"]
        );
        assert_eq!(
            t("status address analysis ids"),
            ["status", "address", "analysis", "id"]
        );
    }

    #[test]
    fn empty_and_symbol_only_text_has_no_tokens() {
        assert!(t("").is_empty());
        assert!(t("  --- !!! \u{200b} ").is_empty());
    }
}
