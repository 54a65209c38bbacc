//! The embedded store: in-process, durable on local disk, with etcd's semantics.
