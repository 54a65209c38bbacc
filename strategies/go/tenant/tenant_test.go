package main

import (
	"reflect"
	"strings"
	"testing"

	"strategyhost.dev/sdk"
	"strategyhost.dev/sdk/abi"
	"strategyhost.dev/sdk/sdktest"
)

func TestTheManifest(t *testing.T) {
	m, err := sdktest.Registered().Manifest()
	if err != nil {
		t.Fatal(err)
	}
	want := &abi.Manifest{
		ABIVersion: 1, ABIMinorVersion: sdk.ABIMinorVersion, Name: "tenants-go",
		Resources:     []abi.Resource{{Group: "example.com", Version: "v1", Kind: "Tenant", Plural: "tenants", Scope: abi.ScopeCluster}},
		Operations:    append(append([]abi.Operation{}, sdk.BeforeWrite...), abi.OperationAfterCreate, abi.OperationAfterDelete),
		HostFunctions: []abi.HostFunction{abi.HostFunctionLog, abi.HostFunctionGet, abi.HostFunctionApply},
		Applies:       []abi.GroupKind{{Group: "", Kind: "Namespace"}},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got  %+v\nwant %+v", m, want)
	}
}

func TestTheNameMustBeALabel(t *testing.T) {
	long := strings.Repeat("a", 64)
	const label = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
	for in, want := range map[string]string{
		`{"metadata":{"name":"team-a"}}`:        "",
		`{"metadata":{"name":"Team_A"}}`:        `metadata.name: Invalid value: "Team_A": ` + label,
		`{"metadata":{"name":"` + long + `"}}`:  `metadata.name: Invalid value: "` + long + `": must be no more than 63 characters`,
		`{"metadata":{"name":"-` + long + `"}}`: `metadata.name: Invalid value: "-` + long + `": must be no more than 63 characters` + "\n" + `metadata.name: Invalid value: "-` + long + `": ` + label,
		`{"metadata":{}}`:                       "metadata.name: Required value: a tenant needs a name",
		`{"metadata":{"name":7}}`:               "metadata.name: Required value: a tenant needs a name",
	} {
		obj, errs, warnings, err := sdktest.Create(in)
		if err != nil || warnings != nil {
			t.Fatal(err, warnings)
		}
		if got := sdktest.Shown(errs); got != want {
			t.Errorf("%s: got %q, want %q", in, got, want)
		}
		if obj == nil {
			t.Errorf("%s: no object", in)
		}
	}
}

func TestCreatingATenantAppliesItsNamespace(t *testing.T) {
	sdktest.ResetHost()
	if err := sdktest.AfterCreate(`{"metadata":{"name":"team-a"}}`); err != nil {
		t.Fatal(err)
	}
	applied := sdktest.TakeApplied()
	want := []map[string]any{{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "team-a", "labels": map[string]any{"example.com/tenant": "team-a"}}}}
	if !reflect.DeepEqual(applied, want) {
		t.Errorf("applied %v", applied)
	}
	if logs := sdktest.TakeLogs(); len(logs) != 1 || logs[0] != (sdk.LogLine{Level: sdk.LevelInfo, Message: "created namespace team-a"}) {
		t.Errorf("logs %v", logs)
	}
}

func TestAnExistingNamespaceIsLeftAsItIs(t *testing.T) {
	sdktest.ResetHost()
	sdktest.PutObject("", "namespaces", "", "team-b", map[string]any{"metadata": map[string]any{"name": "team-b"}})
	if err := sdktest.AfterCreate(`{"metadata":{"name":"team-b"}}`); err != nil {
		t.Fatal(err)
	}
	if applied := sdktest.TakeApplied(); len(applied) != 0 {
		t.Errorf("applied %v", applied)
	}
	if logs := sdktest.TakeLogs(); len(logs) != 1 || logs[0].Message != "namespace team-b exists: left as it is" {
		t.Errorf("logs %v", logs)
	}
}

func TestADryRunActsOnNothing(t *testing.T) {
	sdktest.ResetHost()
	h := sdktest.Registered()
	h.Context.DryRun = true
	if err := h.AfterCreate(`{"metadata":{"name":"team-c"}}`); err != nil {
		t.Fatal(err)
	}
	if applied := sdktest.TakeApplied(); len(applied) != 0 {
		t.Errorf("applied %v", applied)
	}
}

func TestHostRefusalsAreTheHooksErrors(t *testing.T) {
	defer sdktest.ResetHost()
	sdktest.ResetHost()
	sdktest.SetHostError(sdk.HostGet, "namespaces are not served")
	if err := sdktest.AfterCreate(`{"metadata":{"name":"team-d"}}`); errString(err) != "reading namespace team-d: namespaces are not served" {
		t.Errorf("got %v", err)
	}
	sdktest.ResetHost()
	sdktest.SetHostError(sdk.HostApply, "apply of Namespace is not declared")
	if err := sdktest.AfterCreate(`{"metadata":{"name":"team-d"}}`); errString(err) != "creating namespace team-d: apply of Namespace is not declared" {
		t.Errorf("got %v", err)
	}
	if err := sdktest.AfterCreate(`{"metadata":{}}`); errString(err) != "the tenant has no name" {
		t.Errorf("got %v", err)
	}
}

func TestDeletingATenantIsAudited(t *testing.T) {
	sdktest.ResetHost()
	h := sdktest.Registered()
	h.Context.RequestID = "req-7"
	h.Context.User = sdk.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}
	if err := h.AfterDelete(`{"metadata":{"name":"team-a","uid":"u-1"}}`); err != nil {
		t.Fatal(err)
	}
	want := []sdk.LogLine{{Level: sdk.LevelInfo, Message: `audit: tenant "team-a" (uid "u-1") deleted by "alice" in request req-7`}}
	if logs := sdktest.TakeLogs(); !reflect.DeepEqual(logs, want) {
		t.Errorf("logs %v", logs)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
