//! OpenAPI documents built from the served resources' schemas: `/openapi/v2` (Swagger 2.0) and
//! `/openapi/v3` with one document per group-version, each operation tagged with
//! `x-kubernetes-group-version-kind` and the PATCH/POST/PUT operations advertising
//! `fieldValidation`, so kubectl validates server-side and `kubectl explain` works.

use serde_json::{json, Map, Value};
use sha2::Digest as _;

use strategy_host_registry::aggregation::Aggregation;
use strategy_host_registry::{Registry, ResourceDefinition, ServedResource};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";

/// A short uppercase hex digest (the `hash=` of `serverRelativeURL`, storage version hashes).
pub(crate) fn short_hash(text: &str) -> String {
    let d = sha2::Sha256::digest(text.as_bytes());
    d.iter().take(8).map(|b| format!("{b:02X}")).collect()
}

/// `com.example.v1.Widget` for group `example.com`.
pub(crate) fn schema_name(def: &ResourceDefinition, version: &str, kind: &str) -> String {
    if def.group.is_empty() {
        return format!("io.k8s.api.core.{version}.{kind}");
    }
    if def.group == strategy_host_registry::definition::CRD_GROUP {
        return format!("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}.{kind}");
    }
    let reversed: Vec<&str> = def.group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

fn gvk(def: &ResourceDefinition, version: &str, kind: &str) -> Value {
    json!([{"group": def.group, "version": version, "kind": kind}])
}

fn meta_schemas(prefix: &str) -> Map<String, Value> {
    let s = |d: &str| json!({"type": "string", "description": d});
    let mut m = Map::new();
    m.insert(OBJECT_META.into(), json!({
        "type": "object",
        "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
        "properties": {
            "name": s("Name must be unique within a namespace."),
            "generateName": s("GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided."),
            "namespace": s("Namespace defines the space within which each name must be unique."),
            "uid": s("UID is the unique in time and space value for this object."),
            "resourceVersion": s("An opaque value that represents the internal version of this object."),
            "generation": {"type": "integer", "format": "int64", "description": "A sequence number representing a specific generation of the desired state."},
            "creationTimestamp": {"type": "string", "format": "date-time", "description": "CreationTimestamp is a timestamp representing the server time when this object was created."},
            "deletionTimestamp": {"type": "string", "format": "date-time", "description": "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted."},
            "deletionGracePeriodSeconds": {"type": "integer", "format": "int64", "description": "Number of seconds allowed for this object to gracefully terminate."},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Map of string keys and values that can be used to organize and categorize objects."},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Annotations is an unstructured key value map stored with a resource."},
            "finalizers": {"type": "array", "items": {"type": "string"}, "description": "Must be empty before the object is deleted from the registry."},
            "ownerReferences": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}, "description": "List of objects depended by this object."},
            "managedFields": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}, "description": "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow."},
            "selfLink": s("Deprecated."),
        }
    }));
    m.insert(LIST_META.into(), json!({
        "type": "object",
        "description": "ListMeta describes metadata that synthetic resources must have.",
        "properties": {
            "resourceVersion": s("String that identifies the server's internal version of this object."),
            "continue": s("continue may be set if the user set a limit on the number of items returned."),
            "remainingItemCount": {"type": "integer", "format": "int64"},
        }
    }));
    let _ = prefix;
    m
}

/// A CRD schema in OpenAPI v2's form, as kube-apiserver publishes it (its
/// `ToStructuralOpenAPIV2`), at every level: no `allOf`/`oneOf`/`anyOf`/`not`; a nullable value
/// is untyped, and neither it nor one that preserves unknown fields lists items or properties;
/// an array without items and an object preserving unknown fields are untyped (kubectl cannot
/// handle them typed); a nullable property is not required.
fn to_v2(schema: &mut Value) {
    let Value::Object(m) = schema else { return };
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        m.remove(junctor);
    }
    let nullable = m.remove("nullable") == Some(Value::Bool(true));
    let preserves = m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if nullable {
        m.remove("type");
    }
    if nullable || preserves {
        m.remove("items");
        m.remove("properties");
    }
    let typed = |m: &Map<String, Value>, t: &str| m.get("type").and_then(Value::as_str) == Some(t);
    if (typed(m, "array") && !m.contains_key("items")) || (preserves && typed(m, "object")) {
        m.remove("type");
    }
    let nullable_properties: Vec<String> = m
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter(|(_, v)| v["nullable"] == true)
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default();
    if m.get("additionalProperties")
        .is_some_and(|a| a["nullable"] == true)
    {
        m.remove("required");
    }
    if let Some(Value::Array(required)) = m.get_mut("required") {
        required.retain(|r| {
            !r.as_str()
                .is_some_and(|r| nullable_properties.iter().any(|n| n == r))
        });
        if required.is_empty() {
            m.remove("required");
        }
    }
    if let Some(Value::Object(properties)) = m.get_mut("properties") {
        properties.values_mut().for_each(to_v2);
    }
    match m.get_mut("items") {
        Some(Value::Array(items)) => items.iter_mut().for_each(to_v2),
        Some(items) => to_v2(items),
        None => {}
    }
    if let Some(additional) = m.get_mut("additionalProperties").filter(|a| a.is_object()) {
        to_v2(additional);
    }
}

/// The schemas of one resource at one version: the object and its list; in OpenAPI v2's form
/// when `v2`, where a schema that preserves unknown fields at its root (or none at all) is
/// published as a bare object, as kube-apiserver does, since kubectl would refuse every field
/// outside a schema's properties.
fn resource_schemas(
    r: &ServedResource,
    version: &str,
    ref_prefix: &str,
    v2: bool,
) -> Vec<(String, Value)> {
    let def = &r.def;
    let mut schema = def
        .version(version)
        .and_then(|v| v.schema.clone())
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    if !schema.is_object() {
        schema = json!({"type": "object"});
    }
    let bare = v2 && schema["x-kubernetes-preserve-unknown-fields"] == true;
    if bare {
        schema = json!({"type": "object"});
    } else if v2 {
        to_v2(&mut schema);
    }
    let props = (!bare).then(|| {
        schema
            .as_object_mut()
            .expect("object")
            .entry("properties")
            .or_insert_with(|| json!({}))
    });
    if let Some(props) = props.and_then(Value::as_object_mut) {
        props.insert("apiVersion".into(), json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}));
        props.insert("kind".into(), json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}));
        props.insert("metadata".into(), json!({"allOf": [{"$ref": format!("{ref_prefix}{OBJECT_META}")}], "description": "Standard object's metadata."}));
    }
    schema["type"] = json!("object");
    schema["x-kubernetes-group-version-kind"] = gvk(def, version, &def.kind);
    let name = schema_name(def, version, &def.kind);
    let list = json!({
        "type": "object",
        "description": format!("{} is a list of {}", def.list_kind, def.kind),
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"allOf": [{"$ref": format!("{ref_prefix}{LIST_META}")}]},
            "items": {"type": "array", "items": {"$ref": format!("{ref_prefix}{name}")}},
        },
        "x-kubernetes-group-version-kind": gvk(def, version, &def.list_kind),
    });
    vec![
        (name.clone(), schema),
        (schema_name(def, version, &def.list_kind), list),
    ]
}

fn query_param(name: &str, type_: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": type_, "uniqueItems": true}})
}

fn operation(
    def: &ResourceDefinition,
    version: &str,
    action: &str,
    op_id: String,
    schema_ref: &str,
    writes: bool,
) -> Value {
    let mut params = vec![query_param(
        "pretty",
        "string",
        "If 'true', then the output is pretty printed.",
    )];
    if writes {
        params.push(query_param(
            "dryRun",
            "string",
            "When present, indicates that modifications should not be persisted.",
        ));
        params.push(query_param("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes."));
        params.push(query_param("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields: Ignore, Warn or Strict."));
    }
    if action == "list" {
        for (n, t) in [
            ("labelSelector", "string"),
            ("fieldSelector", "string"),
            ("limit", "integer"),
            ("continue", "string"),
            ("resourceVersion", "string"),
            ("resourceVersionMatch", "string"),
            ("watch", "boolean"),
            ("allowWatchBookmarks", "boolean"),
            ("sendInitialEvents", "boolean"),
            ("timeoutSeconds", "integer"),
        ] {
            params.push(query_param(n, t, n));
        }
    }
    let content = json!({"application/json": {"schema": {"$ref": schema_ref}}});
    let mut op = json!({
        "operationId": op_id,
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": content}, "401": {"description": "Unauthorized"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": def.group, "version": version, "kind": def.kind},
    });
    match action {
        "post" | "put" => {
            op["requestBody"] = json!({"content": {"application/json": {"schema": {"$ref": schema_ref}}}, "required": true})
        }
        "patch" => {
            op["requestBody"] = json!({"content": {
            "application/merge-patch+json": {"schema": {"type": "object"}},
            "application/json-patch+json": {"schema": {"type": "object"}},
        }, "required": true})
        }
        _ => {}
    }
    op
}

fn paths_for(r: &ServedResource, version: &str, ref_prefix: &str) -> Map<String, Value> {
    let def = &r.def;
    let base = if def.group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{}/{version}", def.group)
    };
    let collection = if def.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", def.plural)
    } else {
        format!("{base}/{}", def.plural)
    };
    let obj_ref = format!("{ref_prefix}{}", schema_name(def, version, &def.kind));
    let list_ref = format!("{ref_prefix}{}", schema_name(def, version, &def.list_kind));
    let id = |verb: &str, suffix: &str| {
        format!(
            "{verb}{}{}{}",
            def.kind,
            if def.namespaced { "Namespaced" } else { "" },
            suffix
        )
    };
    let mut ns_params = vec![];
    if def.namespaced {
        ns_params.push(json!({"name": "namespace", "in": "path", "required": true, "schema": {"type": "string"}}));
    }
    let name_param =
        json!({"name": "name", "in": "path", "required": true, "schema": {"type": "string"}});
    let mut paths = Map::new();
    paths.insert(collection.clone(), json!({
        "get": operation(def, version, "list", id("list", ""), &list_ref, false),
        "post": operation(def, version, "post", id("create", ""), &obj_ref, true),
        "delete": operation(def, version, "deletecollection", id("deletecollection", ""), &list_ref, false),
        "parameters": ns_params,
    }));
    let mut item_params = ns_params.clone();
    item_params.push(name_param);
    // The object's read, replace and patch, or its status' (`suffix` "Status").
    let read_write = |suffix: &str| {
        json!({
            "get": operation(def, version, "get", id("read", suffix), &obj_ref, false),
            "put": operation(def, version, "put", id("replace", suffix), &obj_ref, true),
            "patch": operation(def, version, "patch", id("patch", suffix), &obj_ref, true),
            "parameters": item_params,
        })
    };
    let mut item = read_write("");
    item["delete"] = operation(def, version, "delete", id("delete", ""), &obj_ref, true);
    paths.insert(format!("{collection}/{{name}}"), item);
    if def.version(version).is_some_and(|v| v.status_subresource) {
        paths.insert(
            format!("{collection}/{{name}}/status"),
            read_write("Status"),
        );
    }
    if def.namespaced {
        paths.insert(format!("{base}/{}", def.plural), json!({"get": operation(def, version, "list", format!("list{}ForAllNamespaces", def.kind), &list_ref, false)}));
    }
    paths
}

/// Every served group-version, as `api/v1` / `apis/{group}/{version}`.
fn group_versions(registry: &Registry) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in registry.resources() {
        for v in &r.def.versions {
            let gv = (r.def.group.clone(), v.name.clone());
            if !out.contains(&gv) {
                out.push(gv);
            }
        }
    }
    out.sort();
    out
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The OpenAPI v3 document of one group-version, if served.
pub(crate) fn v3_group_version(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let served = super::discovery::served_at(registry, group, version)?;
    let prefix = "#/components/schemas/";
    let mut schemas = meta_schemas(prefix);
    let mut paths = Map::new();
    for r in &served {
        schemas.extend(resource_schemas(r, version, prefix, false));
        paths.extend(paths_for(r, version, prefix));
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Strategy Host", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// `/openapi/v3`: the index of group-version documents.
pub(crate) fn v3_index(registry: &Registry, aggregation: Option<&Aggregation>) -> Value {
    let mut paths = Map::new();
    for (g, v) in group_versions(registry) {
        let doc = v3_group_version(registry, &g, &v).unwrap_or_default();
        let hash = short_hash(&doc.to_string());
        let p = gv_path(&g, &v);
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")}),
        );
    }
    // An extension server's group/versions: their documents are its own, proxied (the hash
    // follows its APIService, so clients fetch again when it changes).
    for apiservice in aggregation.map(Aggregation::remotes).unwrap_or_default() {
        let spec = &apiservice["spec"];
        let (g, v) = (
            spec["group"].as_str().unwrap_or_default(),
            spec["version"].as_str().unwrap_or_default(),
        );
        let hash = short_hash(&format!(
            "{}{}",
            apiservice["metadata"]["resourceVersion"], spec
        ));
        let p = gv_path(g, v);
        paths.insert(
            p.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// `/openapi/v2`: one Swagger document for everything.
pub(crate) fn v2(registry: &Registry) -> Value {
    let prefix = "#/definitions/";
    let mut definitions = meta_schemas(prefix);
    let mut paths = Map::new();
    for r in registry.resources() {
        for v in &r.def.versions {
            for (name, schema) in resource_schemas(&r, &v.name, prefix, true) {
                definitions.insert(name, schema);
            }
            for (p, mut item) in paths_for(&r, &v.name, prefix) {
                // Swagger 2 operations carry no request bodies or content maps; keep the tags.
                if let Some(ops) = item.as_object_mut() {
                    for op in ops.values_mut().filter(|o| o.is_object()) {
                        if let Some(o) = op.as_object_mut() {
                            o.remove("requestBody");
                            o.insert("responses".into(), json!({"200": {"description": "OK"}}));
                            if let Some(params) =
                                o.get_mut("parameters").and_then(Value::as_array_mut)
                            {
                                for param in params.iter_mut() {
                                    let t = param["schema"]["type"].clone();
                                    if let Some(pm) = param.as_object_mut() {
                                        pm.remove("schema");
                                        pm.insert("type".into(), t);
                                    }
                                }
                            }
                        }
                    }
                    if let Some(params) = ops.get_mut("parameters").and_then(Value::as_array_mut) {
                        for param in params.iter_mut() {
                            if let Some(pm) = param.as_object_mut() {
                                pm.remove("schema");
                                pm.insert("type".into(), json!("string"));
                            }
                        }
                    }
                }
                paths.insert(p, item);
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Strategy Host", "version": env!("CARGO_PKG_VERSION")},
        "paths": paths,
        "definitions": definitions,
    })
}
