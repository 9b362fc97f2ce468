//! Tokenizer shared by indexing and querying.
//!
//! 1. **Normalise**: Unicode NFKD, then combining marks are dropped, so accented Latin folds onto
//!    its base letters (`Café` → `Cafe`) and compatibility forms onto plain ones (`ﬁ` → `fi`,
//!    full-width `ＡＢＣ` → `ABC`).
//! 2. **Split** into maximal runs of alphanumeric characters: punctuation, whitespace, `_`, `-`,
//!    `.` and `/` separate words, so snake_case and kebab-case identifiers split for free.
//! 3. **CJK**: inside a run, Han, Hiragana, Katakana and Hangul characters form their own segments,
//!    indexed as overlapping character bigrams (a lone character as itself), since these scripts
//!    do not separate words with spaces.
//! 4. **Identifiers**: other segments split at camelCase boundaries: a lower-case letter followed
//!    by an upper-case one (`getOrder` → `get` `order`), and a capitalised word after an acronym
//!    or a digit (`HTTPServer` → `http` `server`, `EC2Instances` → `ec2` `instances`). Letters and
//!    digits otherwise stay together (`ec2`, `s3`, `v2`).
//! 5. **Words** are lower-cased; those shorter than two characters and English function words
//!    ([`STOP_WORDS`]) are dropped; the rest are stemmed with the Snowball English stemmer
//!    (`policies` → `polici`, `running` → `run`), so inflections of one word meet.

use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// English function words that carry no meaning about what a tool does. Negations (`not`, `no`)
/// and particles that change an action (`on`, `off`, `up`, `down`, `out`, `in`) are kept.
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "being", "but", "by", "can", "could", "did", "do", "does", "doing", "for", "from",
    "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if",
    "into", "is", "it", "its", "itself", "just", "me", "might", "my", "myself", "of", "or", "our",
    "ours", "please", "she", "should", "so", "some", "such", "than", "that", "the", "their",
    "theirs", "them", "then", "there", "these", "they", "this", "those", "to", "us", "was", "we",
    "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
    "would", "you", "your", "yours",
];

/// Tokens of `text`, in order, duplicates kept.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokenize_into(text, &mut out);
    out
}

/// The words of `text` before stemming, in order, duplicates kept: normalised and lower-cased,
/// split as [`tokenize`] splits them, stop words and one-character words dropped, CJK runs as
/// their bigrams. Each is what one token of `tokenize(text)` was stemmed from, and tokenizes on
/// its own to that token again; the rare word that does not is left out (a character with an
/// upper case and no lower one, `🅐`, after a letter lower-cased: `𖹀🅐` → `𖹠🅐`, which splits).
pub fn words(text: &str) -> Vec<String> {
    let (mut out, mut again) = (Vec::new(), Vec::new());
    Tokenizer::default().for_each_word(text, &mut |word, stemmed| {
        again.clear();
        tokenize_into(word, &mut again);
        let token = if stemmed {
            stem(word)
        } else {
            word.to_string()
        };
        if again.len() == 1 && again[0] == token {
            out.push(word.to_string());
        }
    });
    out
}

/// Appends the tokens of `text` to `out`.
pub fn tokenize_into(text: &str, out: &mut Vec<String>) {
    Tokenizer::default().tokenize_into(text, out);
}

/// Tokenizer state kept across texts (a reusable character buffer).
///
/// [`Tokenizer::for_each_word`] yields each normalised word *before* stemming, with whether it
/// is to be stemmed (CJK bigrams are not), so that an index builder can map each distinct word
/// to its term once instead of stemming every occurrence.
#[derive(Debug, Default)]
pub struct Tokenizer {
    run: Vec<char>,
    word: String,
}

impl Tokenizer {
    /// Appends the tokens of `text` to `out`.
    pub fn tokenize_into(&mut self, text: &str, out: &mut Vec<String>) {
        self.for_each_word(text, &mut |word, stemmed| {
            out.push(if stemmed {
                stem(word)
            } else {
                word.to_string()
            })
        });
    }

    /// Calls `f(word, to_stem)` for each word of `text`, in order.
    pub fn for_each_word(&mut self, text: &str, f: &mut dyn FnMut(&str, bool)) {
        if text.is_ascii() {
            // the common case, on bytes: nothing to normalise, no CJK, one byte per character
            let runs = text.split(|c: char| !c.is_ascii_alphanumeric());
            for seg in runs.filter(|r| !r.is_empty()) {
                self.split_case_ascii(seg.as_bytes(), f);
            }
            return;
        }
        let mut run = std::mem::take(&mut self.run);
        run.clear();
        let mut flush = |run: &mut Vec<char>, this: &mut Self| {
            if !run.is_empty() {
                this.split_scripts(run, f);
                run.clear();
            }
        };
        for c in text.nfkd().filter(|&c| !is_combining_mark(c)) {
            if c.is_alphanumeric() {
                run.push(c)
            } else {
                flush(&mut run, self)
            }
        }
        flush(&mut run, self);
        self.run = run;
    }

    /// Splits one alphanumeric run into CJK and other segments.
    fn split_scripts(&mut self, run: &[char], f: &mut dyn FnMut(&str, bool)) {
        let mut start = 0;
        while start < run.len() {
            let cjk = is_cjk(run[start]);
            let end = run[start..]
                .iter()
                .position(|&c| is_cjk(c) != cjk)
                .map_or(run.len(), |n| start + n);
            if cjk {
                bigrams(&run[start..end], f);
            } else {
                self.split_case(&run[start..end], f);
            }
            start = end;
        }
    }

    /// Splits a segment at case boundaries and emits its normalised words.
    fn split_case(&mut self, seg: &[char], f: &mut dyn FnMut(&str, bool)) {
        let mut start = 0;
        for i in 1..seg.len() {
            if is_case_boundary(seg, i) {
                self.emit(&seg[start..i], f);
                start = i;
            }
        }
        self.emit(&seg[start..], f);
    }

    /// [`Tokenizer::split_case`] for an ASCII alphanumeric segment, on its bytes.
    fn split_case_ascii(&mut self, seg: &[u8], f: &mut dyn FnMut(&str, bool)) {
        let mut start = 0;
        for i in 1..seg.len() {
            let (prev, cur) = (seg[i - 1], seg[i]);
            let boundary = cur.is_ascii_uppercase()
                && (prev.is_ascii_lowercase()
                    || ((prev.is_ascii_uppercase() || prev.is_ascii_digit())
                        && seg.get(i + 1).is_some_and(u8::is_ascii_lowercase)));
            if boundary {
                self.emit_ascii(&seg[start..i], f);
                start = i;
            }
        }
        self.emit_ascii(&seg[start..], f);
    }

    fn emit_ascii(&mut self, piece: &[u8], f: &mut dyn FnMut(&str, bool)) {
        if piece.len() < 2 {
            return;
        }
        self.word.clear();
        self.word
            .extend(piece.iter().map(|b| char::from(b.to_ascii_lowercase())));
        if !is_stop_word(&self.word) {
            f(&self.word, true);
        }
    }

    fn emit(&mut self, piece: &[char], f: &mut dyn FnMut(&str, bool)) {
        self.word.clear();
        if piece.iter().all(char::is_ascii) {
            self.word.extend(piece.iter().map(char::to_ascii_lowercase));
        } else {
            self.word = piece.iter().collect::<String>().to_lowercase(); // final sigma and all
        }
        let word = self.word.as_str();
        if word.chars().nth(1).is_none() || is_stop_word(word) {
            return;
        }
        f(word, true);
    }
}

/// Number of leading characters a word keeps in its prefix term (see [`prefix_term`]).
pub const PREFIX_LEN: usize = 4;

/// The prefix term of a normalised word: `^` and its first [`PREFIX_LEN`] characters, for an
/// alphabetic word longer than that (`multiplication` and `multiply` → `^mult`). Stemming misses
/// derivations (`multipl` ≠ `multipli`, `creation` ≠ `creat`); a prefix term, at a lower query
/// weight, lets such variants still meet. `^` never occurs in a word, so prefix terms cannot
/// collide with word terms.
pub fn prefix_term(word: &str) -> Option<String> {
    let mut chars = word.chars();
    let head: String = chars.by_ref().take(PREFIX_LEN).collect();
    let longer = chars.next().is_some();
    (longer && word.chars().all(|c| c.is_alphabetic() && !is_cjk(c))).then(|| format!("^{head}"))
}

/// True for a word of [`STOP_WORDS`]: at most a couple of comparisons, against the stop words
/// of the same length and first letter (this runs for every word of every indexed text).
fn is_stop_word(word: &str) -> bool {
    const LONGEST: usize = 16;
    static BY_SHAPE: OnceLock<Vec<Vec<&'static str>>> = OnceLock::new();
    let shape = |w: &str| match w.as_bytes() {
        [first @ b'a'..=b'z', ..] if w.len() <= LONGEST => {
            Some(w.len() * 26 + usize::from(first - b'a'))
        }
        _ => None,
    };
    let table = BY_SHAPE.get_or_init(|| {
        let mut table = vec![Vec::new(); (LONGEST + 1) * 26];
        for &w in STOP_WORDS {
            table[shape(w).expect("stop words are short, lower-case ASCII")].push(w);
        }
        table
    });
    shape(word).is_some_and(|i| table[i].contains(&word))
}

/// True for characters of scripts written without spaces between words.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF        // Hiragana, Katakana
        | 0x3400..=0x4DBF      // CJK Extension A
        | 0x4E00..=0x9FFF      // CJK Unified Ideographs
        | 0xAC00..=0xD7AF      // Hangul syllables
        | 0xF900..=0xFAFF      // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // CJK Extensions B-F, Compatibility Supplement
}

fn bigrams(seg: &[char], f: &mut dyn FnMut(&str, bool)) {
    if seg.len() == 1 {
        f(&seg[0].to_string(), false);
    }
    for pair in seg.windows(2) {
        f(&pair.iter().collect::<String>(), false);
    }
}

/// True when a new word starts at `seg[i]`.
fn is_case_boundary(seg: &[char], i: usize) -> bool {
    let (prev, cur) = (seg[i - 1], seg[i]);
    if !cur.is_uppercase() {
        return false;
    }
    if prev.is_lowercase() {
        return true;
    }
    (prev.is_uppercase() || prev.is_numeric()) && seg.get(i + 1).is_some_and(|n| n.is_lowercase())
}

/// Snowball English stem of a lower-case word.
pub fn stem(word: &str) -> String {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER
        .get_or_init(|| Stemmer::create(Algorithm::English))
        .stem(word)
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Vec<String> {
        tokenize(s)
    }

    #[test]
    fn stop_words_are_sorted_and_each_is_recognised() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOP_WORDS.iter().all(|w| is_stop_word(w)));
        for w in [
            "", "x", "order", "Ä", "ab", "thee", "theirs2", "aboutt", "été",
        ] {
            assert!(!is_stop_word(w), "{w}");
        }
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
        assert_eq!(t("DescribeEC2Instances"), ["describ", "ec2", "instanc"]);
    }

    #[test]
    fn folds_accents_and_compatibility_forms() {
        assert_eq!(t("Café RÉSUMÉ naïve"), t("cafe resume naive"));
        assert_eq!(t("ﬁle ＡＢＣ"), ["file", "abc"]);
    }

    #[test]
    fn cjk_runs_become_character_bigrams() {
        assert_eq!(t("天气预报"), ["天气", "气预", "预报"]);
        assert_eq!(t("查询天气 weather"), ["查询", "询天", "天气", "weather"]);
        assert_eq!(t("東京"), ["東京"]);
        assert_eq!(t("雨"), ["雨"]);
    }

    #[test]
    fn stems_inflections_onto_one_term() {
        assert_eq!(t("orders ordering ordered"), ["order", "order", "order"]);
        assert_eq!(t("policies policy"), ["polici", "polici"]);
        assert_eq!(t("running runs"), ["run", "run"]);
    }

    #[test]
    fn long_alphabetic_words_have_a_four_letter_prefix_term() {
        assert_eq!(prefix_term("multiplication").as_deref(), Some("^mult"));
        assert_eq!(prefix_term("multiply"), prefix_term("multiplication"));
        assert_eq!(prefix_term("résumé").as_deref(), Some("^résu"));
        // four letters or fewer, digits, CJK: none
        for word in ["list", "ec2", "s3bucket", "20230405", "天气预报表", "ab"] {
            assert_eq!(prefix_term(word), None, "{word}");
        }
        assert!(!t("multiplication").iter().any(|w| w.starts_with('^')));
    }

    #[test]
    fn drops_single_characters_and_function_words() {
        assert_eq!(t("a b cd e"), ["cd"]);
        assert_eq!(t("what is the weather in Paris"), ["weather", "in", "pari"]);
        assert_eq!(t("turn off the lights"), ["turn", "off", "light"]);
    }

    #[test]
    fn words_come_before_stemming_and_cjk_bigrams_are_not_stemmed() {
        let mut words = Vec::new();
        Tokenizer::default().for_each_word("Running 天气 orders", &mut |w, s| {
            words.push((w.to_string(), s))
        });
        let expect = [("running", true), ("天气", false), ("orders", true)];
        assert_eq!(words, expect.map(|(w, s)| (w.to_string(), s)));
    }

    #[test]
    fn words_split_identifiers_and_fold_like_the_tokens() {
        assert_eq!(
            words("putRecord put_record"),
            ["put", "record", "put", "record"]
        );
        assert_eq!(
            words("the Café HTTPServer 天气预报"),
            ["cafe", "http", "server", "天气", "气预", "预报"]
        );
    }

    proptest::proptest! {
        /// Each word, tokenized on its own, is one of the text's tokens, in the text's order:
        /// words written into a field (learned text) index as the request's own tokens.
        #[test]
        fn each_word_tokenizes_to_its_own_token(text in "\\PC{0,40}") {
            let tokens = t(&text);
            let mut rest = tokens.iter();
            for w in words(&text) {
                let one = t(&w);
                proptest::prop_assert_eq!(one.len(), 1, "{}", w);
                proptest::prop_assert!(rest.any(|token| *token == one[0]), "{} not in {:?}", w, tokens);
            }
        }

        /// On text of plain letters, digits and separators every token has its word.
        #[test]
        fn plain_text_keeps_a_word_per_token(text in "[a-zA-Z0-9 _.-]{0,40}") {
            proptest::prop_assert_eq!(words(&text).len(), t(&text).len());
        }

        /// ASCII text takes a byte path; with a non-ASCII separator appended (an em space,
        /// which NFKD folds to a space) the same text takes the general path: same tokens.
        #[test]
        fn the_ascii_path_tokenizes_like_the_general_one(text in "[ -~]{0,40}") {
            let general = format!("{text}\u{2003}");
            proptest::prop_assert_eq!(t(&text), t(&general));
        }
    }

    #[test]
    fn empty_and_symbol_only_text_has_no_tokens() {
        assert!(t("").is_empty());
        assert!(t("  --- !!! \u{200b} ").is_empty());
    }
}
