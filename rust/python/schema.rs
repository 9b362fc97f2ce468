//! Tool definitions read straight from their Python objects: the indexed text of a JSON schema
//! and the byte size of a definition's compact JSON, without a Python string per tool.
//!
//! Both equal their Python reference to the byte: `toolsift.text.schema_text` (argument names,
//! titles, descriptions and enum values, three property levels, `$ref` not followed) and
//! `len(json.dumps(definition, ensure_ascii=False, separators=(",", ":")).encode())`, the
//! measure of `toolsift.assemble.default_token_count`. They model exactly the plain JSON types
//! a `Tool` holds after its deep copy (`dict`, `list`, `tuple`, `str`, `int`, `float`, `bool`,
//! `None`); anything else on their way (a subclass, a custom mapping, an int past `i64`, a string
//! that is not Unicode, a lookup that raises, nesting past any real schema) stops them with
//! [`Unsupported`], and the caller measures that tool with the Python reference instead.
//!
//! | path | taken when | pinned by |
//! |---|---|---|
//! | [`schema_text`] | a field given as a `dict` | `tests/test_core_text.py` (against `schema_text`) |
//! | [`definition_bytes`] | `Index` with the default token counter | `tests/test_core_text.py` (against `json.dumps`) |

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// A value the walkers do not model exactly: the Python reference must measure this tool.
#[derive(Debug)]
pub struct Unsupported;

type Walk<T = ()> = Result<T, Unsupported>;

/// `toolsift.text.MAX_PROPERTY_DEPTH`: property levels whose names and descriptions are indexed.
const MAX_PROPERTY_DEPTH: usize = 3;
/// `toolsift.text._MAX_NESTING`: `items`/combinator steps followed between property levels.
const MAX_NESTING: usize = 12;
/// Deeper nesting than a valid tool may have (`registry.MAX_SCHEMA_DEPTH` is 100), so the walk
/// stops on a cycle or a mutated schema instead of overflowing the stack.
const MAX_JSON_DEPTH: usize = 128;

/// What a value is to the walkers.
enum Kind<'a, 'py> {
    Dict(&'a Bound<'py, PyDict>),
    List(&'a Bound<'py, PyList>),
    Str(&'a str),
    /// `tuple`, `int`, `float`, `bool` or `None`: a JSON value that is neither mapping, list nor string.
    Scalar,
}

fn kind<'a, 'py>(obj: &'a Bound<'py, PyAny>) -> Walk<Kind<'a, 'py>> {
    if let Ok(d) = obj.cast_exact::<PyDict>() {
        Ok(Kind::Dict(d))
    } else if let Ok(l) = obj.cast_exact::<PyList>() {
        Ok(Kind::List(l))
    } else if let Ok(s) = obj.cast_exact::<PyString>() {
        s.to_str().map(Kind::Str).map_err(|_| Unsupported)
    } else if obj.is_none()
        || obj.is_exact_instance_of::<PyBool>()
        || obj.is_exact_instance_of::<PyInt>()
        || obj.is_exact_instance_of::<PyFloat>()
        || obj.is_exact_instance_of::<PyTuple>()
    {
        Ok(Kind::Scalar)
    } else {
        Err(Unsupported)
    }
}

/// `dict.get(key)`, the key an interned string (made and hashed once per process).
fn get<'py>(
    dict: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> Walk<Option<Bound<'py, PyAny>>> {
    dict.get_item(key).map_err(|_| Unsupported)
}

/// Pieces of text joined by newlines, as `"\n".join(pieces)`.
struct Pieces<'a> {
    out: &'a mut String,
    count: usize,
}

impl Pieces<'_> {
    fn push(&mut self, piece: &str) {
        if self.count > 0 {
            self.out.push('\n');
        }
        self.out.push_str(piece);
        self.count += 1;
    }
}

/// Runs a walk; a panic in it (PyO3's, when a dict changes size while it is iterated, which
/// only code run by a lookup could do) counts as [`Unsupported`] too.
fn guarded<T>(walk: impl FnOnce() -> Walk<T>) -> Walk<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(walk)).unwrap_or(Err(Unsupported))
}

/// Appends the schema text of `schema` to `out` (`toolsift.text.schema_text`); on
/// [`Unsupported`], `out` may hold part of it.
pub fn schema_text(schema: &Bound<'_, PyAny>, out: &mut String) -> Walk {
    let mut pieces = Pieces { out, count: 0 };
    guarded(|| walk(schema, 1, 0, &mut pieces))
}

fn walk(node: &Bound<'_, PyAny>, depth: usize, nesting: usize, out: &mut Pieces<'_>) -> Walk {
    if depth > MAX_PROPERTY_DEPTH || nesting > MAX_NESTING {
        return Ok(());
    }
    let Kind::Dict(node) = kind(node)? else {
        return Ok(());
    };
    let py = node.py();
    if let Some(props) = get(node, intern!(py, "properties"))? {
        if let Kind::Dict(props) = kind(&props)? {
            for (name, sub) in props.iter() {
                let Kind::Str(name) = kind(&name)? else {
                    return Err(Unsupported); // str() of another key type: left to Python
                };
                out.push(name);
                describe(&sub, out)?;
                walk(&sub, depth + 1, 0, out)?;
            }
        }
    }
    if let Some(items) = get(node, intern!(py, "items"))? {
        match kind(&items)? {
            Kind::List(items) => {
                for sub in items.iter() {
                    walk(&sub, depth, nesting + 1, out)?;
                }
            }
            _ => walk(&items, depth, nesting + 1, out)?,
        }
    }
    let combinators = [
        intern!(py, "anyOf"),
        intern!(py, "oneOf"),
        intern!(py, "allOf"),
    ];
    for key in combinators {
        if let Some(variants) = get(node, key)? {
            if let Kind::List(variants) = kind(&variants)? {
                for sub in variants.iter() {
                    describe(&sub, out)?;
                    walk(&sub, depth, nesting + 1, out)?;
                }
            }
        }
    }
    Ok(())
}

/// Title, description and enum values of one schema node.
fn describe(node: &Bound<'_, PyAny>, out: &mut Pieces<'_>) -> Walk {
    let Kind::Dict(node) = kind(node)? else {
        return Ok(());
    };
    let py = node.py();
    for key in [intern!(py, "title"), intern!(py, "description")] {
        if let Some(value) = get(node, key)? {
            if let Kind::Str(text) = kind(&value)? {
                out.push(text);
            }
        }
    }
    if let Some(values) = get(node, intern!(py, "enum"))? {
        if let Kind::List(values) = kind(&values)? {
            for value in values.iter() {
                enum_value(&value, out)?;
            }
        }
    }
    Ok(())
}

/// `str(value)` of an enum value that is a string or a number (not a bool).
fn enum_value(value: &Bound<'_, PyAny>, out: &mut Pieces<'_>) -> Walk {
    if let Kind::Str(text) = kind(value)? {
        out.push(text);
    } else if value.is_exact_instance_of::<PyInt>() {
        let n: i64 = value.extract().map_err(|_| Unsupported)?;
        out.push(&n.to_string());
    } else if value.is_exact_instance_of::<PyFloat>() {
        let text = value.str().map_err(|_| Unsupported)?;
        out.push(text.to_str().map_err(|_| Unsupported)?);
    }
    Ok(())
}

/// Bytes of `s` as a JSON string with `ensure_ascii=False`: quotes, two-byte escapes for `"`,
/// `\`, `\b`, `\f`, `\n`, `\r` and `\t`, `\u00XX` for the other control characters, every other
/// character as its UTF-8.
pub fn json_str_bytes(s: &str) -> usize {
    let escapes: usize = s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | 0x08 | 0x0c | b'\n' | b'\r' | b'\t' => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    s.len() + escapes + 2
}

/// Bytes of `value` as compact JSON (`json.dumps(value, ensure_ascii=False,
/// separators=(",", ":"))`, UTF-8).
pub fn json_bytes(value: &Bound<'_, PyAny>, depth: usize) -> Walk<usize> {
    if depth > MAX_JSON_DEPTH {
        return Err(Unsupported);
    }
    match kind(value)? {
        Kind::Str(s) => Ok(json_str_bytes(s)),
        Kind::Dict(d) => {
            let mut total = 1 + d.len().max(1); // braces and the commas between members
            for (key, item) in d.iter() {
                let Kind::Str(key) = kind(&key)? else {
                    return Err(Unsupported); // json turns other keys into strings: left to Python
                };
                total += json_str_bytes(key) + 1 + json_bytes(&item, depth + 1)?;
            }
            Ok(total)
        }
        Kind::List(l) => sequence_bytes(l.iter(), l.len(), depth),
        Kind::Scalar => scalar_bytes(value, depth),
    }
}

fn sequence_bytes<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    len: usize,
    depth: usize,
) -> Walk<usize> {
    let mut total = 1 + len.max(1);
    for item in items {
        total += json_bytes(&item, depth + 1)?;
    }
    Ok(total)
}

fn scalar_bytes(value: &Bound<'_, PyAny>, depth: usize) -> Walk<usize> {
    if value.is_none() {
        Ok(4)
    } else if let Ok(b) = value.cast_exact::<PyBool>() {
        Ok(if b.is_true() { 4 } else { 5 })
    } else if let Ok(t) = value.cast_exact::<PyTuple>() {
        sequence_bytes(t.iter(), t.len(), depth)
    } else if value.is_exact_instance_of::<PyInt>() {
        let n: i64 = value.extract().map_err(|_| Unsupported)?;
        Ok(n.to_string().len())
    } else {
        let x: f64 = value.extract().map_err(|_| Unsupported)?;
        if x.is_nan() {
            Ok(3) // NaN
        } else if x.is_infinite() {
            Ok(if x > 0.0 { 8 } else { 9 }) // Infinity, -Infinity
        } else {
            let text = value.repr().map_err(|_| Unsupported)?;
            Ok(text.to_str().map_err(|_| Unsupported)?.len())
        }
    }
}

/// Bytes of `{"name":…,"description":…,"parameters":…}` as compact JSON.
pub fn definition_bytes(
    name: &Bound<'_, PyAny>,
    description: &Bound<'_, PyAny>,
    parameters: &Bound<'_, PyAny>,
) -> Walk<usize> {
    let (Kind::Str(name), Kind::Str(description)) = (kind(name)?, kind(description)?) else {
        return Err(Unsupported);
    };
    // {"name": , "description": , "parameters": }
    const FRAME: usize = 8 + 15 + 14 + 1;
    let parameters = guarded(|| json_bytes(parameters, 1))?;
    Ok(FRAME + json_str_bytes(name) + json_str_bytes(description) + parameters)
}
