//! JSON Lines written straight from Python values, byte for byte what
//! `json.dumps(value, ensure_ascii=False)` writes (default separators, keys in the dict's own
//! order: a schema's properties are listed to a model as its author ordered them), one
//! line per value: the tools section of an index file and a saved catalog, without a Python
//! string per tool.
//!
//! Plain JSON types are written here (`dict` with string keys, `list`, `tuple`, `str`, `int`
//! within `i64`, `float`, `bool`, `None`); a value holding anything else (a subclass, another key
//! type, a huge int, a string that is not Unicode, nesting past any real tool) is written by
//! `json.dumps` itself, so its text, or its error, is the reference's. Pinned by
//! `tests/test_core_text.py` against `json.dumps` and `Tool.to_json`.

use std::io::Write as _;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// A value written by `json.dumps` instead.
struct Unsupported;

type Write = Result<(), Unsupported>;

/// Deeper than a valid tool nests (`registry.MAX_SCHEMA_DEPTH` is 100).
const MAX_DEPTH: usize = 128;

/// Bytes that `json.dumps(..., ensure_ascii=False)` escapes: `"`, `\\` and the control characters.
const ESCAPED: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// Appends `"text"`, escaped as `json.dumps(..., ensure_ascii=False)` does: two-character
/// escapes for `"`, `\\`, `\n`, `\r`, `\t`, `\b` and `\f`, `\u00xx` for the other control
/// characters, every other character as its UTF-8.
fn string(text: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.push(b'"');
    let mut plain = 0; // start of the run of bytes written as they are
    while let Some(at) = bytes[plain..].iter().position(|&b| ESCAPED[usize::from(b)]) {
        let i = plain + at;
        out.extend_from_slice(&bytes[plain..i]);
        let b = bytes[i];
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x08 => b'b',
            0x0c => b'f',
            _ => 0,
        };
        if short == 0 {
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 15)],
            ]);
        } else {
            out.extend_from_slice(&[b'\\', short]);
        }
        plain = i + 1;
    }
    out.extend_from_slice(&bytes[plain..]);
    out.push(b'"');
}

fn text<'a>(value: &'a Bound<'_, PyAny>) -> Option<Result<&'a str, Unsupported>> {
    value
        .cast_exact::<PyString>()
        .ok()
        .map(|s| s.to_str().map_err(|_| Unsupported))
}

fn value(v: &Bound<'_, PyAny>, depth: usize, out: &mut Vec<u8>) -> Write {
    if depth > MAX_DEPTH {
        return Err(Unsupported);
    }
    if let Some(s) = text(v) {
        string(s?, out);
    } else if let Ok(d) = v.cast_exact::<PyDict>() {
        object(d, depth, out)?;
    } else if let Ok(l) = v.cast_exact::<PyList>() {
        array(l.iter(), depth, out)?;
    } else if let Ok(t) = v.cast_exact::<PyTuple>() {
        array(t.iter(), depth, out)?;
    } else if v.is_none() {
        out.extend_from_slice(b"null");
    } else if let Ok(b) = v.cast_exact::<PyBool>() {
        out.extend_from_slice(if b.is_true() { b"true" } else { b"false" });
    } else if v.is_exact_instance_of::<PyInt>() {
        let n: i64 = v.extract().map_err(|_| Unsupported)?;
        write!(out, "{n}").map_err(|_| Unsupported)?;
    } else if v.is_exact_instance_of::<PyFloat>() {
        float(v, out)?;
    } else {
        return Err(Unsupported);
    }
    Ok(())
}

fn float(v: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> Write {
    let x: f64 = v.extract().map_err(|_| Unsupported)?;
    if !x.is_finite() {
        return Err(Unsupported); // not JSON: `json.dumps(allow_nan=False)` refuses it
    } else {
        let repr = v.repr().map_err(|_| Unsupported)?;
        out.extend_from_slice(repr.to_str().map_err(|_| Unsupported)?.as_bytes());
    }
    Ok(())
}

/// Members in the dict's order, `"key": value`.
fn object(d: &Bound<'_, PyDict>, depth: usize, out: &mut Vec<u8>) -> Write {
    out.push(b'{');
    for (n, (k, v)) in d.iter().enumerate() {
        let Some(key) = text(&k) else {
            return Err(Unsupported); // json turns other keys into strings, or refuses them
        };
        if n > 0 {
            out.extend_from_slice(b", ");
        }
        string(key?, out);
        out.extend_from_slice(b": ");
        value(&v, depth + 1, out)?;
    }
    out.push(b'}');
    Ok(())
}

fn array<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    depth: usize,
    out: &mut Vec<u8>,
) -> Write {
    out.push(b'[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        value(&item, depth + 1, out)?;
    }
    out.push(b']');
    Ok(())
}

/// Appends the line of `v`, written here or, for what is not modelled, by `json.dumps`.
pub fn line(v: &Bound<'_, PyAny>, out: &mut Vec<u8>) -> PyResult<()> {
    let start = out.len();
    let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| value(v, 1, out)));
    if !matches!(written, Ok(Ok(()))) {
        out.truncate(start);
        let py = v.py();
        let kwargs = PyDict::new(py);
        kwargs.set_item("ensure_ascii", false)?;
        kwargs.set_item("allow_nan", false)?; // a file toolsift cannot read back is never written
        let dumped = py
            .import("json")?
            .getattr("dumps")?
            .call((v,), Some(&kwargs))?;
        let encoded = dumped.call_method1("encode", ("utf-8",))?;
        out.extend_from_slice(encoded.extract::<&[u8]>()?);
    }
    out.push(b'\n');
    Ok(())
}
