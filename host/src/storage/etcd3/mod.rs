//! The etcd3 store: `Storage` on etcd v3 through `etcd-client`.
