//! The changes the collector makes to objects: owner references dropped or unblocked, its
//! finalizers removed (each answers whether it changed anything).

use std::collections::HashSet;

use serde_json::Value;

/// Removes the members of the array at `pointer` that `gone` selects; answers whether any was.
fn remove_from(obj: &mut Value, pointer: &str, gone: impl Fn(&Value) -> bool) -> bool {
    let Some(list) = obj.pointer_mut(pointer).and_then(Value::as_array_mut) else {
        return false;
    };
    let before = list.len();
    list.retain(|v| !gone(v));
    list.len() != before
}

/// Removes the owner references `gone` selects (the list too, once empty); answers whether
/// any was removed.
pub(super) fn drop_owner_references(obj: &mut Value, gone: impl Fn(&Value) -> bool) -> bool {
    let changed = remove_from(obj, "/metadata/ownerReferences", gone);
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let refs = meta.get("ownerReferences").and_then(Value::as_array);
        if refs.is_some_and(Vec::is_empty) {
            meta.remove("ownerReferences");
        }
    }
    changed
}

/// Removes `finalizer`; answers whether it was there.
pub(super) fn drop_finalizer(obj: &mut Value, finalizer: &str) -> bool {
    remove_from(obj, "/metadata/finalizers", |f| f == finalizer)
}

/// Sets `blockOwnerDeletion: false` on the references to the `waiting` owners.
pub(super) fn unblock(obj: &mut Value, waiting: &HashSet<String>) -> bool {
    let mut changed = false;
    if let Some(refs) = obj
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        for r in refs {
            let targeted = r["uid"].as_str().is_some_and(|u| waiting.contains(u));
            if targeted && r["blockOwnerDeletion"] == true {
                r["blockOwnerDeletion"] = Value::Bool(false);
                changed = true;
            }
        }
    }
    changed
}
