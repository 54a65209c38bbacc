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

/// Every namespace gets the `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap
/// holding the CA that verifies the server (kube-controller-manager's serviceaccount and root CA
/// publisher controllers): both come back when deleted, the ConfigMap when changed, and a
/// namespace being deleted gets neither back.
#[test]
fn every_namespace_gets_the_default_account_and_the_root_ca() {
    let f = SecureFixture::start(&[]);
    let admin = Credential::Admin;
    let ca = std::fs::read_to_string(f.ca_file()).unwrap();
    let account = |ns: &str| format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
    let root_ca = |ns: &str| format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt");
    let get = |path: &str| f.call(&admin, "GET", path, None).unwrap();
    let published = |ns: &str| {
        let (sa, cm) = (get(&account(ns)), get(&root_ca(ns)));
        sa.code == 200 && cm.code == 200 && cm.json()["data"]["ca.crt"] == ca.as_str()
    };
    for ns in ["default", "kube-system"] {
        f.eventually(&format!("{ns} to have both"), || published(ns));
    }
    f.ok(&admin, &["create", "namespace", "team"]);
    f.eventually("a new namespace to have both", || published("team"));
    let cm = get(&root_ca("team")).json();
    assert!(
        cm["metadata"]["annotations"]["kubernetes.io/description"].is_string(),
        "{cm}"
    );

    // Deleted, both come back (new objects); changed, the ConfigMap is put back.
    let uid = |path: &str| get(path).json()["metadata"]["uid"].clone();
    let (old_sa, old_cm) = (uid(&account("team")), uid(&root_ca("team")));
    for path in [account("team"), root_ca("team")] {
        assert_eq!(f.call(&admin, "DELETE", &path, None).unwrap().code, 200);
    }
    f.eventually("both to come back", || {
        published("team") && uid(&account("team")) != old_sa && uid(&root_ca("team")) != old_cm
    });
    let mut changed = get(&root_ca("team")).json();
    changed["data"] = json!({"ca.crt": "not a CA"});
    let put = f
        .call(&admin, "PUT", &root_ca("team"), Some(&changed))
        .unwrap();
    assert_eq!(put.code, 200, "{}", put.body);
    f.eventually("the ConfigMap to be put back", || published("team"));

    // A namespace being deleted is emptied and gets nothing back.
    f.ok(&admin, &["delete", "namespace", "team", "--wait=false"]);
    f.eventually("the namespace to go", || {
        get("/api/v1/namespaces/team").code == 404
    });
    assert_eq!(get(&account("team")).code, 404);
    assert_eq!(get(&root_ca("team")).code, 404);
}
