package main

import (
	"encoding/json"
	"testing"

	"strategyhost.dev/sdk"
	"strategyhost.dev/sdk/sdktest"
)

func write(labels map[string]any) sdktest.Write {
	return sdktest.Write{Operation: sdk.AdmissionCreate, Namespace: "default", Name: "x",
		Object: map[string]any{"metadata": map[string]any{"name": "x", "labels": labels}}}
}

func TestAnObjectWithoutAnOwnerIsRefused(t *testing.T) {
	for _, labels := range []map[string]any{nil, {}, {"owner": ""}, {"team": "a"}} {
		errs, _, err := sdktest.Admit(write(labels))
		if err != nil || sdktest.Shown(errs) != "metadata.labels[owner]: Required value: every namespaced object outside kube-system names its owner" {
			t.Errorf("labels %v: %q, %v", labels, sdktest.Shown(errs), err)
		}
	}
}

func TestAnObjectWithAnOwnerIsAdmitted(t *testing.T) {
	errs, warnings, err := sdktest.Admit(write(map[string]any{"owner": "team-a"}))
	if err != nil || errs != nil || warnings != nil {
		t.Errorf("%v %v %v", errs, warnings, err)
	}
}

// The Go policy declares what the Rust one declares, but for its name: the same match,
// actions and failure policy.
func TestTheDeclarationIsTheRustExamples(t *testing.T) {
	m, err := sdktest.Registered().Manifest()
	if err != nil {
		t.Fatal(err)
	}
	p := m.AdmissionPolicy
	if p == nil || p.FailurePolicy != "Fail" || len(p.ValidationActions) != 1 || p.ValidationActions[0] != "Deny" || len(m.Operations) != 1 {
		t.Fatalf("manifest %+v, declaration %+v", m, p)
	}
	var match map[string]any
	if err := json.Unmarshal(p.MatchResources, &match); err != nil {
		t.Fatal(err)
	}
	rule := match["resourceRules"].([]any)[0].(map[string]any)
	requirement := match["namespaceSelector"].(map[string]any)["matchExpressions"].([]any)[0].(map[string]any)
	if rule["scope"] != "Namespaced" || requirement["values"].([]any)[0] != "kube-system" || match["matchPolicy"] != "Equivalent" {
		t.Errorf("match %s", p.MatchResources)
	}
}
