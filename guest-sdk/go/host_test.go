package sdk_test

import (
	"reflect"
	"testing"

	"strategyhost.dev/sdk"
)

func TestTheNativeHostRecords(t *testing.T) {
	sdk.ResetHost()
	defer sdk.ResetHost()

	sdk.Info("one")
	sdk.Warn("two")
	sdk.Error("three")
	sdk.Debug("four")
	sdk.Log(sdk.LevelInfo, "five")
	want := []sdk.LogLine{{sdk.LevelInfo, "one"}, {sdk.LevelWarn, "two"}, {sdk.LevelError, "three"}, {sdk.LevelDebug, "four"}, {sdk.LevelInfo, "five"}}
	if got := sdk.TakeLogs(); !reflect.DeepEqual(got, want) {
		t.Errorf("logs %v", got)
	}
	if got := sdk.TakeLogs(); got != nil {
		t.Errorf("logs taken twice: %v", got)
	}

	sdk.PutObject("", "quotas", "team-a", "default", map[string]any{"spec": map[string]any{"pods": 10}})
	sdk.PutObject("", "quotas", "team-b", "b", map[string]any{"n": 2})
	sdk.PutObject("", "quotas", "team-a", "a", map[string]any{"n": 1})
	sdk.PutObject("example.com", "quotas", "team-a", "other-group", map[string]any{})
	obj, found, err := sdk.Get("", "quotas", "team-a", "default")
	if err != nil || !found || !reflect.DeepEqual(obj, map[string]any{"spec": map[string]any{"pods": jsonNumber("10")}}) {
		t.Errorf("get: %v %v %v", obj, found, err)
	}
	if obj, found, err := sdk.Get("", "quotas", "team-a", "missing"); obj != nil || found || err != nil {
		t.Errorf("get missing: %v %v %v", obj, found, err)
	}
	items, err := sdk.List("", "quotas", "team-a", "")
	if err != nil || len(items) != 2 || items[0]["n"] != jsonNumber("1") {
		t.Errorf("list in team-a: %v %v", items, err)
	}
	if items, _ := sdk.List("", "quotas", "", "a=b"); len(items) != 3 {
		t.Errorf("list everywhere: %v", items)
	}

	stored, err := sdk.Apply(map[string]any{"kind": "Namespace", "metadata": map[string]any{"name": "a"}})
	if err != nil || stored["kind"] != "Namespace" {
		t.Errorf("apply: %v %v", stored, err)
	}
	if applied := sdk.TakeApplied(); len(applied) != 1 || applied[0]["kind"] != "Namespace" {
		t.Errorf("applied %v", applied)
	}

	sdk.SetHostError(sdk.HostApply, "not granted")
	sdk.SetHostError(sdk.HostGet, "unknown resource")
	sdk.SetHostError(sdk.HostList, "no")
	if _, err := sdk.Apply(map[string]any{}); errString(err) != "not granted" {
		t.Errorf("apply: %v", err)
	}
	if _, _, err := sdk.Get("", "quotas", "team-a", "default"); errString(err) != "unknown resource" {
		t.Errorf("get: %v", err)
	}
	if _, err := sdk.List("", "quotas", "", ""); errString(err) != "no" {
		t.Errorf("list: %v", err)
	}
	if applied := sdk.TakeApplied(); len(applied) != 0 {
		t.Errorf("a refused apply was recorded: %v", applied)
	}
}
