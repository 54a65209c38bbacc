//! Converting a resource's objects between its versions: reads convert the stored object to the
//! version asked for, writes convert the request's object to the storage version. A strategy
//! that converts (a wasm module exporting a conversion) is asked first; else the definition's
//! `spec.conversion` decides — `None` rewrites `apiVersion`, `Webhook` sends one
//! `ConversionReview` per batch (a list's objects together).
//!
//! What comes back is checked as Kubernetes checks it: the count, the `apiVersion` asked for,
//! the kind; and only labels and annotations of the metadata may change (the rest is restored
//! from the object sent), so a converter cannot rename, move or re-own an object.

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use serde_json::{json, Value};

use super::definition::Conversion;
use super::error::{Error, Result};
use super::store::RegistryStore;
use strategy_host_storage::SharedObject;

/// How long a conversion webhook may take (Kubernetes' fixed 30 s).
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// The most objects one `ConversionReview` carries (a list page of thousands is several).
const WEBHOOK_BATCH: usize = 500;

/// Reviews of one conversion in flight at once.
const WEBHOOK_REVIEWS_AT_ONCE: usize = 4;

fn api_version_of(obj: &Value) -> &str {
    obj.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

impl RegistryStore {
    /// Whether reading or writing at another version than the stored one asks a converter
    /// (else only `apiVersion` changes).
    pub(super) fn converts_versions(&self) -> bool {
        self.def.stored_as.is_none()
            && (self.strategy.converts()
                || matches!(self.def.conversion, Conversion::Webhook { .. }))
    }

    /// `obj` at `version` (the request's).
    ///
    /// # Errors
    /// `Internal` when the converter fails or answers something Kubernetes would refuse.
    pub async fn at_version(&self, obj: Value, version: &str) -> Result<Value> {
        let mut converted = self.convert(vec![obj], version).await?;
        Ok(converted.pop().unwrap_or(Value::Null))
    }

    /// `obj` (at the request's version) as it is stored.
    ///
    /// # Errors
    /// As [`RegistryStore::at_version`].
    pub(super) async fn at_storage_version(&self, obj: Value) -> Result<Value> {
        if !self.converts_versions() {
            return Ok(self.to_storage_version(obj));
        }
        let storage_version = self.def.storage_version().to_string();
        self.at_version(obj, &storage_version).await
    }

    /// Whether `obj` already is an object of this resource at `api_version` (nothing to do).
    pub(super) fn is_at(&self, obj: &SharedObject, api_version: &str) -> bool {
        obj.api_version() == Some(api_version) && obj.kind() == Some(self.def.kind.as_str())
    }

    /// Shared objects at `version`: the same shared object where it already is, the others
    /// converted together (one webhook call for a list).
    ///
    /// # Errors
    /// As [`RegistryStore::at_version`].
    pub(super) async fn shared_at_version(
        &self,
        objects: Vec<Arc<SharedObject>>,
        version: &str,
    ) -> Result<Vec<Arc<SharedObject>>> {
        let converted = self.converted_at_version(objects, version).await?;
        Ok(self.defaulted_on_read(converted, version))
    }

    /// Objects stored before the definition's defaults last changed, with the defaults of
    /// `version`'s schema filled in, as Kubernetes defaults what it reads from storage; objects
    /// written since carry them already and are shared untouched.
    fn defaulted_on_read(
        &self,
        objects: Vec<Arc<SharedObject>>,
        version: &str,
    ) -> Vec<Arc<SharedObject>> {
        let since = self.def.defaults_revision;
        let schema = self.def.version(version).and_then(|v| v.schema.as_ref());
        let Some(schema) = schema.filter(|_| since > 0) else {
            return objects;
        };
        objects
            .into_iter()
            .map(|o| {
                if o.revision() >= since {
                    return o;
                }
                let mut value = o.to_value();
                match super::schema::apply_defaults(&mut value, schema) {
                    true => Arc::new(SharedObject::new(value)),
                    false => o,
                }
            })
            .collect()
    }

    /// [`RegistryStore::shared_at_version`] before defaulting.
    async fn converted_at_version(
        &self,
        objects: Vec<Arc<SharedObject>>,
        version: &str,
    ) -> Result<Vec<Arc<SharedObject>>> {
        let api_version = self.def.api_version(version);
        let kind = self.def.kind.as_str();
        let at = |o: &SharedObject| self.is_at(o, &api_version);
        if objects.iter().all(|o| at(o)) {
            return Ok(objects);
        }
        // Conversion None (no renamed fields either): only the type changes, in the bytes.
        if !self.converts_versions() && self.def.stored_as.is_none() {
            return Ok(objects
                .into_iter()
                .map(|o| match at(&o) {
                    true => o,
                    false => Arc::new(o.with_type(&api_version, kind)),
                })
                .collect());
        }
        let pending: Vec<usize> = (0..objects.len()).filter(|&i| !at(&objects[i])).collect();
        let mut objects = objects;
        if self.strategy.converts() {
            let sent = pending
                .iter()
                .map(|&i| objects[i].json().to_vec())
                .collect();
            let got = self.module_convert(sent, version, &api_version).await?;
            let by = Checks::new(
                self,
                "module",
                objects[pending[0]].api_version(),
                &api_version,
            );
            by.count(pending.len(), got.len())?;
            for (n, (i, after)) in pending.into_iter().zip(got).enumerate() {
                objects[i] = Arc::new(by.shared(n, &objects[i], after)?);
            }
            return Ok(objects);
        }
        let values = pending.iter().map(|&i| objects[i].to_value()).collect();
        let converted = self.convert(values, version).await?;
        for (i, value) in pending.into_iter().zip(converted) {
            objects[i] = Arc::new(SharedObject::new(value));
        }
        Ok(objects)
    }

    /// `sent` (JSON objects) converted to `version` (`desired` as an `apiVersion`) by the
    /// strategy's module.
    async fn module_convert(
        &self,
        sent: Vec<Vec<u8>>,
        version: &str,
        desired: &str,
    ) -> Result<Vec<Vec<u8>>> {
        let info = self.def.info(version);
        self.strategy
            .convert(&info, sent, desired)
            .await
            .map_err(|e| Error::Internal(format!("conversion failed: {e}")))
    }

    /// `objects` at `version`, in order.
    async fn convert(&self, mut objects: Vec<Value>, version: &str) -> Result<Vec<Value>> {
        if !self.converts_versions() {
            return Ok(objects
                .into_iter()
                .map(|o| self.to_version(o, version))
                .collect());
        }
        let desired = self.def.api_version(version);
        let pending: Vec<usize> = (0..objects.len())
            .filter(|&i| api_version_of(&objects[i]) != desired)
            .collect();
        if !pending.is_empty() {
            let sent: Vec<Value> = pending.iter().map(|&i| objects[i].take()).collect();
            let converted = if self.strategy.converts() {
                let json = sent.iter().map(to_json).collect();
                let got = self.module_convert(json, version, &desired).await?;
                let checks = Checks::new(self, "module", Some(api_version_of(&sent[0])), &desired);
                checks.count(sent.len(), got.len())?;
                (sent.iter().zip(&got).enumerate())
                    .map(|(i, (before, after))| checks.one(i, before, checks.parse(i, after)?))
                    .collect::<Result<_>>()?
            } else {
                self.webhook_convert(&sent, &desired).await?
            };
            for (i, obj) in pending.into_iter().zip(converted) {
                objects[i] = obj;
            }
        }
        Ok(objects
            .into_iter()
            .map(|o| self.to_version(o, version))
            .collect())
    }

    /// The `group/version, Kind=Kind` Kubernetes names a conversion from `api_version` by.
    fn gvk_of(&self, api_version: &str) -> String {
        format!("{api_version}, Kind={}", self.def.kind)
    }

    /// `sent` converted to `desired` by the definition's conversion webhook, in reviews of at
    /// most [`WEBHOOK_BATCH`] objects (a few at a time), so a long list's answer stays within
    /// what a webhook response may weigh.
    async fn webhook_convert(&self, sent: &[Value], desired: &str) -> Result<Vec<Value>> {
        // Made first: a stream mapping a closure over the batches is not provably `Send`.
        let reviews: Vec<_> = sent
            .chunks(WEBHOOK_BATCH)
            .map(|batch| self.webhook_review(batch, desired))
            .collect();
        let converted: Vec<Vec<Value>> = futures::stream::iter(reviews)
            .buffered(WEBHOOK_REVIEWS_AT_ONCE)
            .try_collect()
            .await?;
        Ok(converted.into_iter().flatten().collect())
    }

    /// One `ConversionReview` of `sent`.
    async fn webhook_review(&self, sent: &[Value], desired: &str) -> Result<Vec<Value>> {
        let Conversion::Webhook {
            client,
            review_version,
        } = &self.def.conversion
        else {
            return Ok(sent.to_vec());
        };
        let gvk = self.gvk_of(api_version_of(&sent[0]));
        let uid = super::system_fields::new_uid();
        let review = json!({
            "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": sent},
        });
        let answer = client.post(&review, WEBHOOK_TIMEOUT).await.map_err(|why| {
            Error::Internal(format!("conversion webhook for {gvk} failed: {why}"))
        })?;
        let response = &answer["response"];
        let returned = |why: String| Error::Internal(format!("conversion webhook for {gvk} {why}"));
        if response["uid"].as_str() != Some(uid.as_str()) {
            return Err(returned(format!(
                "returned invalid response: expected response.uid={uid:?}, got {}",
                response["uid"]
            )));
        }
        if response.pointer("/result/status").and_then(Value::as_str) != Some("Success") {
            let message = response
                .pointer("/result/message")
                .and_then(Value::as_str)
                .unwrap_or("");
            return Err(returned(format!("returned failure: {message}")));
        }
        let got = response["convertedObjects"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let checks = Checks::new(self, "webhook", Some(api_version_of(&sent[0])), desired);
        checks.count(sent.len(), got.len())?;
        (sent.iter().zip(got).enumerate())
            .map(|(i, (before, after))| checks.one(i, before, after))
            .collect()
    }
}

/// What Kubernetes checks of a converter's answer: the count, the `apiVersion` asked for, the
/// kind; and only labels and annotations of the metadata may change (the rest is restored).
struct Checks<'a> {
    /// `module` or `webhook`, for the messages.
    by: &'a str,
    /// The `group/version, Kind=Kind` converted from, for the messages.
    gvk: String,
    desired: &'a str,
}

impl<'a> Checks<'a> {
    fn new(store: &RegistryStore, by: &'a str, from: Option<&str>, desired: &'a str) -> Self {
        Self {
            by,
            gvk: store.gvk_of(from.unwrap_or("")),
            desired,
        }
    }

    fn invalid(&self, why: String) -> Error {
        Error::Internal(format!(
            "conversion {} for {} returned {why}",
            self.by, self.gvk
        ))
    }

    /// As many objects came back as were sent.
    fn count(&self, sent: usize, got: usize) -> Result<()> {
        if got != sent {
            return Err(self.invalid(format!("{got} objects, expected {sent}")));
        }
        Ok(())
    }

    /// The `i`-th answer for a shared object: taken as it is when it kept the kind and the
    /// metadata (no tree built), else checked and restored as a tree.
    fn shared(&self, i: usize, before: &SharedObject, after: Vec<u8>) -> Result<SharedObject> {
        let after = match before.converted(after, self.desired) {
            Ok(taken) => return Ok(taken),
            Err(after) => self.parse(i, &after)?,
        };
        Ok(SharedObject::new(self.one(i, &before.to_value(), after)?))
    }

    /// The `i`-th answer (a module's, as it answered) as a tree.
    fn parse(&self, i: usize, json: &[u8]) -> Result<Value> {
        serde_json::from_slice(json).map_err(|e| {
            self.invalid(format!(
                "invalid converted object at index {i}: not a JSON object: {e}"
            ))
        })
    }

    /// The `i`-th answer, checked, with the metadata of `before` restored but for labels and
    /// annotations.
    fn one(&self, i: usize, before: &Value, mut after: Value) -> Result<Value> {
        let desired = self.desired;
        if api_version_of(&after) != desired {
            return Err(self.invalid(format!(
                "invalid converted object at index {i}: invalid apiVersion {:?}, expected {desired:?}",
                api_version_of(&after)
            )));
        }
        if after.get("kind") != before.get("kind") {
            return Err(self.invalid(format!(
                "invalid converted object at index {i}: invalid kind {}, expected {}",
                after["kind"], before["kind"]
            )));
        }
        let mut metadata = before.get("metadata").cloned().unwrap_or(json!({}));
        for key in ["labels", "annotations"] {
            match after
                .pointer(&format!("/metadata/{key}"))
                .filter(|v| !v.is_null())
            {
                Some(v) if v.is_object() => metadata[key] = v.clone(),
                Some(_) => {
                    return Err(self.invalid(format!(
                        "invalid metadata in object at index {i}: metadata.{key} must be a map"
                    )))
                }
                None => {
                    if let Some(m) = metadata.as_object_mut() {
                        m.remove(key);
                    }
                }
            }
        }
        after["metadata"] = metadata;
        Ok(after)
    }
}

fn to_json(obj: &Value) -> Vec<u8> {
    serde_json::to_vec(obj).expect("a JSON value serializes")
}
