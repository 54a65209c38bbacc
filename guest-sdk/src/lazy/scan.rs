//! The JSON scanning under a [`LazyObject`](super::LazyObject): where each member of an object
//! starts and ends, found in one pass over the object's top level without building any value.
//!
//! The object's own braces, names, colons and commas are read strictly; its members' values are
//! skipped by their brackets and quotes alone. That is safe for the text a `LazyObject` is made
//! from: the host's (it encodes every object it sends itself, and checks every answer it takes
//! back) or text serde_json already checked whole. Checking each value's syntax again, as
//! serde_json's `RawValue` does, was most of a lazily converted object's cost.

use std::fmt;
use std::ops::Range;

/// Text that is not a JSON object, or that ends inside one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanError {
    at: usize,
    what: &'static str,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

impl std::error::Error for ScanError {}

fn fail<T>(at: usize, what: &'static str) -> Result<T, ScanError> {
    Err(ScanError { at, what })
}

/// The first byte at or after `at` that is not JSON white space.
pub(crate) fn space(text: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = text.get(at) {
        at += 1;
    }
    at
}

/// One member of an object: the text of its name between the quotes (escapes and all), whether
/// the name holds an escape, and its value's text.
pub(crate) struct Found {
    pub name: Range<usize>,
    pub escaped: bool,
    pub value: Range<usize>,
}

/// Calls `each` with every member of the object that starts at `at` (after any space), in order,
/// and returns where the object ends. Positions are `text`'s.
pub(crate) fn members(
    text: &[u8],
    at: usize,
    mut each: impl FnMut(Found),
) -> Result<usize, ScanError> {
    let mut at = space(text, at);
    if text.get(at) != Some(&b'{') {
        return fail(at, "expected a JSON object");
    }
    at = space(text, at + 1);
    if text.get(at) == Some(&b'}') {
        return Ok(at + 1);
    }
    loop {
        if text.get(at) != Some(&b'"') {
            return fail(at, "expected a member name");
        }
        let (name_end, escaped) = string_end(text, at + 1)?;
        let name = at + 1..name_end;
        at = space(text, name_end + 1);
        if text.get(at) != Some(&b':') {
            return fail(at, "expected `:` after a member name");
        }
        let start = space(text, at + 1);
        let end = value_end(text, start)?;
        each(Found {
            name,
            escaped,
            value: start..end,
        });
        at = space(text, end);
        match text.get(at) {
            Some(b',') => at = space(text, at + 1),
            Some(b'}') => return Ok(at + 1),
            _ => return fail(at, "expected `,` or `}` after a member"),
        }
    }
}

/// The object that `text` is, whole: its members as [`members`] finds them, and nothing but
/// space after it.
pub(crate) fn object(text: &[u8], each: impl FnMut(Found)) -> Result<(), ScanError> {
    let end = space(text, members(text, 0, each)?);
    match end == text.len() {
        true => Ok(()),
        false => fail(end, "trailing characters after the object"),
    }
}

/// The value of the last member of the object `text` named `name` (the one a parser keeps).
pub(crate) fn find(text: &[u8], name: &str) -> Result<Option<Range<usize>>, ScanError> {
    let mut found = None;
    members(text, 0, |member| {
        let matches = match member.escaped {
            false => &text[member.name.clone()] == name.as_bytes(),
            true => unescape(text, &member.name).as_deref() == Some(name),
        };
        if matches {
            found = Some(member.value);
        }
    })?;
    Ok(found)
}

/// A name with escapes (within `text` at `name`, between its quotes) as the string it stands for.
pub(crate) fn unescape(text: &[u8], name: &Range<usize>) -> Option<String> {
    serde_json::from_slice(&text[name.start - 1..name.end + 1]).ok()
}

/// Where the string whose text starts at `at` (after its opening quote) closes, and whether it
/// holds an escape.
fn string_end(text: &[u8], mut at: usize) -> Result<(usize, bool), ScanError> {
    let mut escaped = false;
    loop {
        at = quote_or_backslash(text, at);
        match text.get(at) {
            Some(b'"') => return Ok((at, escaped)),
            Some(b'\\') => {
                escaped = true;
                at += 2;
            }
            Some(_) => at += 1,
            None => return fail(text.len(), "unterminated string"),
        }
    }
}

/// The first `"` or `\\` at or after `at` (or the text's end), eight bytes at a time: most of an
/// object's text is inside strings, and this is where a scan spends its time.
fn quote_or_backslash(text: &[u8], mut at: usize) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // The high bit of each byte of `word` that equals `byte` (and perhaps of bytes after the
    // first such one, which the lowest set bit never points past).
    let equal = |word: u64, byte: u8| {
        let diff = word ^ (ONES * u64::from(byte));
        diff.wrapping_sub(ONES) & !diff & HIGHS
    };
    while let Some(chunk) = text.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let found = equal(word, b'"') | equal(word, b'\\');
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while let Some(byte) = text.get(at) {
        if matches!(byte, b'"' | b'\\') {
            break;
        }
        at += 1;
    }
    at
}

/// Where the value starting at `at` ends: a string at its closing quote, an object or array at
/// its closing bracket (counting the brackets between, outside strings), anything else at the
/// next separator or space.
fn value_end(text: &[u8], at: usize) -> Result<usize, ScanError> {
    match text.get(at) {
        None => fail(at, "expected a value"),
        Some(b'"') => Ok(string_end(text, at + 1)?.0 + 1),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&byte) = text.get(i) {
                match byte {
                    b'"' => i = string_end(text, i + 1)?.0,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            fail(text.len(), "unterminated object or array")
        }
        Some(b',' | b'}' | b']' | b':') => fail(at, "expected a value"),
        Some(_) => {
            let mut i = at;
            while let Some(byte) = text.get(i) {
                if matches!(byte, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                i += 1;
            }
            Ok(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_and_values(text: &str) -> Result<Vec<(String, String)>, ScanError> {
        let mut found = Vec::new();
        object(text.as_bytes(), |m| {
            found.push((
                text[m.name.clone()].to_owned(),
                text[m.value.clone()].to_owned(),
            ))
        })?;
        Ok(found)
    }

    #[test]
    fn finds_each_members_text() {
        let text = r#" { "a" : [1, {"x": "]}"}] , "b\"c":"q\\", "n":-1.5e3,"o":{},"t":true } "#;
        assert_eq!(
            names_and_values(text).unwrap(),
            [
                ("a", r#"[1, {"x": "]}"}]"#),
                (r#"b\"c"#, r#""q\\""#),
                ("n", "-1.5e3"),
                ("o", "{}"),
                ("t", "true"),
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
        assert_eq!(names_and_values("{}").unwrap(), []);
    }

    #[test]
    fn refuses_what_is_not_one_object() {
        for text in [
            "",
            "[]",
            "1",
            "null",
            "{",
            r#"{"a"}"#,
            r#"{"a":}"#,
            r#"{"a":1,}"#,
            r#"{"a":1"#,
            r#"{"a":"x}"#,
            r#"{"a":[1}"#,
            r#"{"a":1}x"#,
            r#"{a:1}"#,
            r#"{"a":1 "b":2}"#,
        ] {
            assert!(names_and_values(text).is_err(), "{text}");
        }
    }

    #[test]
    fn strings_end_at_their_first_unescaped_quote_wherever_it_falls() {
        for len in 0..40 {
            for escape_at in [None, Some(0), Some(7), Some(8), Some(len / 2)] {
                let mut body = "é".repeat(len / 2) + &"x".repeat(len % 2);
                if let Some(at) = escape_at.filter(|&at| body.is_char_boundary(at)) {
                    body.insert_str(at, "\\\"");
                }
                let text = format!(r#"{{"k":"{body}","z":1}}"#);
                let value = format!(r#""{body}""#);
                assert_eq!(
                    names_and_values(&text).unwrap(),
                    [("k".to_owned(), value), ("z".to_owned(), "1".to_owned())],
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn find_takes_the_last_of_duplicates_and_reads_escaped_names() {
        let text = br#"{"a":1,"b\u0041":2,"a":3}"#;
        assert_eq!(find(text, "a").unwrap().map(|r| &text[r]), Some(&b"3"[..]));
        assert_eq!(find(text, "bA").unwrap().map(|r| &text[r]), Some(&b"2"[..]));
        assert_eq!(find(text, "c").unwrap(), None);
    }
}
