//! The controllers on a secure server (RBAC, tokens): setting an owner reference takes permission
//! to delete the object, blocking the owner's deletion takes its finalizers; a service account
//! token Secret is filled, authenticates, and goes with its account.

use serde_json::{json, Value};
use strategy_host_e2e::secure::{Credential, SecureFixture};

use super::{configmap, owned_by, CONFIGMAPS};

#[test]
fn owner_references_take_permission_to_delete_and_blocking_takes_the_owners_finalizers() {
    let f = SecureFixture::start(&[]);
    let admin = Credential::Admin;
    let bob = f.client_certificate("bob", "dev", true);
    let post = |who: &Credential, obj: Value| f.call(who, "POST", CONFIGMAPS, Some(&obj)).unwrap();
    let owner = post(&admin, configmap("owner"));
    assert_eq!(owner.code, 201, "{}", owner.body);
    let owner = owner.json();
    f.ok(
        &admin,
        &[
            "create",
            "role",
            "cm-writer",
            "--verb=create,get,list,update,patch",
            "--resource=configmaps",
        ],
    );
    f.ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "bob-cm",
            "--role=cm-writer",
            "--user=bob",
        ],
    );
    f.eventually("bob may create configmaps", || {
        post(&bob, configmap("probe")).code == 201
    });

    let mut blocking = configmap("blocking");
    blocking["metadata"]["ownerReferences"] = json!([owned_by(&owner, true)]);
    let refused = post(&bob, blocking.clone());
    assert_eq!(refused.code, 403, "{}", refused.body);
    let message = refused.json()["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.starts_with("configmaps \"blocking\" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on"),
        "{message}"
    );
    let mut plain_child = configmap("plain-child");
    plain_child["metadata"]["ownerReferences"] = json!([owned_by(&owner, false)]);
    assert_eq!(
        post(&bob, plain_child).code,
        201,
        "a create may set owner references"
    );

    let mut adopted = f
        .call(&bob, "GET", &format!("{CONFIGMAPS}/probe"), None)
        .unwrap()
        .json();
    adopted["metadata"]["ownerReferences"] = json!([owned_by(&owner, false)]);
    let update = f
        .call(&bob, "PUT", &format!("{CONFIGMAPS}/probe"), Some(&adopted))
        .unwrap();
    assert_eq!(update.code, 403, "{}", update.body);
    assert!(
        update
            .body
            .contains("cannot set an ownerRef on a resource you can't delete"),
        "{}",
        update.body
    );

    f.ok(
        &admin,
        &[
            "create",
            "role",
            "cm-finalizers",
            "--verb=update,delete",
            "--resource=configmaps/finalizers,configmaps",
        ],
    );
    f.ok(
        &admin,
        &[
            "create",
            "rolebinding",
            "bob-finalizers",
            "--role=cm-finalizers",
            "--user=bob",
        ],
    );
    f.eventually("bob may block the owner's deletion", || {
        post(&bob, blocking.clone()).code == 201
    });
    let update = f
        .call(&bob, "PUT", &format!("{CONFIGMAPS}/probe"), Some(&adopted))
        .unwrap();
    assert_eq!(update.code, 200, "{}", update.body);
}

#[test]
fn a_service_account_token_secret_is_filled_works_and_goes_with_its_account() {
    let f = SecureFixture::start(&[]);
    let admin = Credential::Admin;
    f.ok(&admin, &["create", "serviceaccount", "builder"]);
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "builder-token", "annotations": {"kubernetes.io/service-account.name": "builder"}},
    });
    let path = "/api/v1/namespaces/default/secrets";
    let created = f.call(&admin, "POST", path, Some(&secret)).unwrap();
    assert_eq!(created.code, 201, "{}", created.body);
    let secret_path = format!("{path}/builder-token");
    let mut filled = Value::Null;
    f.eventually("the token secret to be filled", || {
        filled = f.call(&admin, "GET", &secret_path, None).unwrap().json();
        filled["data"]["token"].is_string()
    });
    let decode = |v: &Value| {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap())
            .unwrap();
        String::from_utf8(bytes).unwrap()
    };
    assert_eq!(decode(&filled["data"]["namespace"]), "default");
    assert!(
        decode(&filled["data"]["ca.crt"]).contains("BEGIN CERTIFICATE"),
        "{filled}"
    );
    let account = f
        .call(
            &admin,
            "GET",
            "/api/v1/namespaces/default/serviceaccounts/builder",
            None,
        )
        .unwrap()
        .json();
    assert_eq!(
        filled["metadata"]["annotations"]["kubernetes.io/service-account.uid"],
        account["metadata"]["uid"]
    );
    let token = Credential::Token(decode(&filled["data"]["token"]));
    let whoami = f.ok(
        &token,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    );
    assert_eq!(whoami.trim(), "system:serviceaccount:default:builder");

    f.ok(&admin, &["delete", "serviceaccount", "builder"]);
    f.eventually("the token secret to go with its account", || {
        f.call(&admin, "GET", &secret_path, None).unwrap().code == 404
    });
    let refused = f
        .call(&token, "GET", "/api/v1/namespaces/default/configmaps", None)
        .unwrap();
    assert_eq!(refused.code, 401, "{}", refused.body);
}
