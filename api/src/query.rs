//! Raw query strings: percent-decoded `key=value` pairs and the scalar readers (boolean,
//! non-negative integer) every typed parameter set in `params.rs` is built from.

use std::collections::HashMap;

use super::status::Status;

/// Decoded query parameters (the last value wins).
#[derive(Debug, Clone, Default)]
pub struct Query(HashMap<String, String>);

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(
                    std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("zz"),
                    16,
                ) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Query {
    /// Parses a raw query string.
    pub fn parse(raw: Option<&str>) -> Self {
        let mut map = HashMap::new();
        for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            map.insert(percent_decode(k), percent_decode(v));
        }
        Self(map)
    }

    /// One parameter.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// One parameter, absent when empty (Kubernetes treats `?limit=` as no limit).
    pub fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    /// A boolean parameter (`true`/`1`).
    ///
    /// # Errors
    /// 400 for anything but a boolean.
    pub fn flag(&self, key: &str) -> Result<bool, Status> {
        match self.get(key) {
            None | Some("") | Some("false") | Some("0") => Ok(false),
            Some("true") | Some("1") => Ok(true),
            Some(other) => Err(Status::bad_request(format!(
                "invalid value {other:?} for {key}: must be a boolean"
            ))),
        }
    }

    /// A non-negative integer parameter.
    ///
    /// # Errors
    /// 400 for anything but a non-negative integer.
    pub fn number(&self, key: &str) -> Result<Option<u64>, Status> {
        match self.non_empty(key) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                Status::bad_request(format!(
                    "invalid value {v:?} for {key}: must be a non-negative integer"
                ))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_reads_scalars() {
        let q = Query::parse(Some(
            "labelSelector=app%3Dweb%2Ctier+in+(a)&limit=5&watch=true&x=",
        ));
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
        assert_eq!(q.number("limit").unwrap(), Some(5));
        assert!(q.flag("watch").unwrap());
        assert_eq!(q.non_empty("x"), None);
        assert!(Query::parse(Some("limit=-1")).number("limit").is_err());
        assert!(Query::parse(Some("watch=yes")).flag("watch").is_err());
    }
}
