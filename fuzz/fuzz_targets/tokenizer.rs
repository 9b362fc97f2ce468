//! Arbitrary bytes → lossy UTF-8 → `toolsift::tokenize`, checking the invariants rust/tokenizer.rs
//! guarantees by construction:
//!
//! * tokenizing is deterministic, and a reused `Tokenizer` (as `IndexBuilder` reuses one) gives
//!   the same words as a fresh one;
//! * `tokenize` is `for_each_word` with the words marked for stemming passed through `stem`;
//! * a word marked for stemming has at least two characters and is not a stop word; a word not
//!   marked for stemming is a CJK character or bigram (one or two CJK characters);
//! * no token is empty;
//! * a space separates words: `tokenize(a + " " + b) == tokenize(a) ++ tokenize(b)` (NFKD never
//!   reorders across a starter such as U+0020, and the space ends the alphanumeric run).
//!
//! Lower-casing idempotence, stem idempotence and "tokens are alphanumeric" are deliberately not
//! asserted: nothing in the tokenizer guarantees them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolsift::tokenizer::{is_cjk, stem, Tokenizer, STOP_WORDS};

fn words(tk: &mut Tokenizer, text: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    tk.for_each_word(text, &mut |w, to_stem| out.push((w.to_string(), to_stem)));
    out
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text: &str = &text;

    let tokens = toolsift::tokenize(text);
    assert_eq!(
        tokens,
        toolsift::tokenize(text),
        "tokenize is not deterministic"
    );

    let mut tk = Tokenizer::default();
    let first = words(&mut tk, text);
    let again = words(&mut tk, text); // reused buffers
    assert_eq!(
        first, again,
        "a reused Tokenizer disagrees with a fresh one"
    );
    assert_eq!(first.len(), tokens.len());

    for ((word, to_stem), token) in first.iter().zip(&tokens) {
        assert!(!token.is_empty(), "empty token from word {word:?}");
        if *to_stem {
            assert!(word.chars().nth(1).is_some(), "one-character word {word:?}");
            assert!(
                STOP_WORDS.binary_search(&word.as_str()).is_err(),
                "stop word {word:?}"
            );
            let stemmed = stem(word);
            assert_eq!(
                &stemmed, token,
                "token is not the stem of its word {word:?}"
            );
            assert_eq!(stemmed, stem(word), "stem is not deterministic");
        } else {
            let n = word.chars().count();
            assert!(
                (1..=2).contains(&n),
                "CJK token {word:?} is not a character or bigram"
            );
            assert!(
                word.chars().all(is_cjk),
                "unstemmed token {word:?} is not CJK"
            );
            assert_eq!(word, token);
        }
        let _ = stem(token); // stemming a token again must not panic either
    }

    // Split at a character boundary chosen by the first byte; a space between the halves.
    if let Some(&b) = data.first() {
        let mut at = usize::from(b) % (text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let (a, b) = text.split_at(at);
        let mut both = toolsift::tokenize(a);
        both.extend(toolsift::tokenize(b));
        assert_eq!(
            toolsift::tokenize(&format!("{a} {b}")),
            both,
            "a space does not separate {a:?} from {b:?}"
        );
    }
});
