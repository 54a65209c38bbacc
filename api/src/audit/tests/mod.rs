//! Unit tests of the audit log: the policy (`policy.rs`), the event's JSON form (`event.rs`),
//! the log backend (`sink.rs`) and the filter around a request (`filter.rs`).

mod event;
mod filter;
mod policy;
mod sink;

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::user::UserInfo;
use strategy_host_authorization::Attributes;

/// A writer into memory the test keeps a handle on.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    /// Each line written, parsed as JSON.
    fn events(&self) -> Vec<Value> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// A resource request's attributes.
fn resource(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Attributes {
    let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
    Attributes {
        user: user("alice", &["devs", "system:authenticated"]),
        verb: verb.into(),
        resource_request: true,
        path: String::new(),
        api_group: group.into(),
        api_version: "v1".into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name: name.into(),
    }
}

/// A non-resource request's attributes.
fn non_resource(verb: &str, path: &str) -> Attributes {
    Attributes {
        user: user("alice", &["devs"]),
        verb: verb.into(),
        path: path.into(),
        ..Attributes::default()
    }
}

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        username: name.into(),
        groups: groups.iter().map(|g| (*g).to_string()).collect(),
        ..UserInfo::default()
    }
}
