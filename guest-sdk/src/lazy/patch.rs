//! A [`LazyObject`]'s changes as a JSON Patch (RFC 6902): what a module answers instead of the
//! whole object.

use super::{LazyObject, Member};

impl LazyObject {
    /// The changes made since this object was decoded, as a JSON Patch (RFC 6902) of `remove`
    /// and `add` operations; empty when nothing changed. This is what a module answers instead
    /// of the whole object (ABI 1.4), so neither side encodes or parses what the strategy did
    /// not touch.
    ///
    /// # Errors
    ///
    /// A value the strategy set does not encode (serde_json's error).
    ///
    /// # Examples
    ///
    /// ```
    /// use strategy_guest_sdk::LazyObject;
    ///
    /// let mut obj: LazyObject =
    ///     serde_json::from_str(r#"{"spec":{"template":{"x":1}},"status":{}}"#).unwrap();
    /// assert!(obj.json_patch().unwrap().is_empty());
    /// obj.remove("status");
    /// obj.object_mut(&["spec"]).unwrap().insert("replicas", 1);
    /// assert_eq!(
    ///     String::from_utf8(obj.json_patch().unwrap()).unwrap(),
    ///     r#"[{"op":"remove","path":"/status"},{"op":"add","path":"/spec/replicas","value":1}]"#,
    /// );
    /// ```
    pub fn json_patch(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut ops = Vec::new();
        self.write_patch(&mut String::new(), &mut ops)?;
        if let Some(first) = ops.first_mut() {
            *first = b'[';
            ops.push(b']');
        }
        Ok(ops)
    }

    /// Appends this object's changes as `,{op}` items, their paths below `path`.
    fn write_patch(&self, path: &mut String, ops: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let len = path.len();
        // A removed member set again is replaced by its `add`.
        for name in self.removed.iter().filter(|n| self.position(n).is_none()) {
            push_token(path, name);
            write_op(ops, "remove", path, None)?;
            path.truncate(len);
        }
        let text = self.text_bytes();
        for (name, member) in &self.members {
            push_token(path, self.name(name));
            match member {
                Member::Raw(_) => {}
                Member::Opened(object) => object.write_patch(path, ops)?,
                changed => write_op(ops, "add", path, Some((changed, text)))?,
            }
            path.truncate(len);
        }
        Ok(())
    }
}

/// Appends `/name` to a JSON Pointer, escaped (RFC 6901).
fn push_token(path: &mut String, name: &str) {
    path.push('/');
    for c in name.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            c => path.push(c),
        }
    }
}

/// Appends `,{"op":op,"path":path[,"value":value]}`.
fn write_op(
    ops: &mut Vec<u8>,
    op: &str,
    path: &str,
    value: Option<(&Member, &[u8])>,
) -> Result<(), serde_json::Error> {
    ops.extend_from_slice(b",{\"op\":\"");
    ops.extend_from_slice(op.as_bytes());
    ops.extend_from_slice(b"\",\"path\":");
    serde_json::to_writer(&mut *ops, path)?;
    if let Some((value, text)) = value {
        ops.extend_from_slice(b",\"value\":");
        value.write_json(text, ops)?;
    }
    ops.push(b'}');
    Ok(())
}
