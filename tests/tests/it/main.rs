//! The end-to-end tests: the real `strategy-host` binary started against the real stores and
//! driven by real clients (kubectl, Helm, the Python, JavaScript and kube-rs clients, curl-like
//! HTTP). One test binary with a module per area, so the suite links its dependencies once.

mod admission_policies;
mod admission_policy_bindings;
mod admission_wasm_policies;
mod admission_webhooks;
mod aggregation;
mod aggregation_two_hosts;
mod api_etcd;
mod api_http;
mod api_http_reads;
mod apiservices;
mod audit_log;
mod authorization_modules;
mod authorization_webhook;
mod builtin_kinds;
mod cel_rules;
mod controllers;
mod crd_versions;
mod custom_resources;
mod discovery;
mod disk_trouble;
mod encryption_at_rest;
mod encryption_kms;
mod flow_control;
mod front_proxy;
mod go_strategies;
mod impersonation;
mod issuer_discovery;
mod js_client;
mod kube_rs;
mod kubectl;
mod linearizability;
mod metrics;
mod module_cli;
mod oidc;
mod protobuf;
mod python_client;
mod rollout;
mod security;
mod server_lifecycle;
mod server_side_apply;
mod services;
mod slow_connections;
mod store_snapshots;
mod strategies;
