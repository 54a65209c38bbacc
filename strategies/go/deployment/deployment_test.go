package main

import (
	"reflect"
	"testing"

	"strategyhost.dev/sdk"
	"strategyhost.dev/sdk/abi"
	"strategyhost.dev/sdk/sdktest"
)

// The Rust module's tests (strategies/deployment/src/tests.rs), ported, then answers through
// the ABI byte for byte.

const valid = `{
	"apiVersion": "apps.example.com/v1", "kind": "Deployment",
	"metadata": {"name": "web", "namespace": "default"},
	"spec": {
		"selector": {"matchLabels": {"app": "web"}},
		"template": {"metadata": {"labels": {"app": "web", "tier": "fe"}}, "spec": {"containers": []}}
	},
	"status": {"readyReplicas": 9}
}`

var ctx = &sdk.Context{}

func deployment(t *testing.T, text string) *sdk.LazyObject {
	t.Helper()
	obj, err := sdk.ParseLazyObject([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func text(t *testing.T, obj *sdk.LazyObject, path ...string) string {
	t.Helper()
	raw, err := obj.Raw(path...)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestCreateAppliesDefaultsAndClearsStatus(t *testing.T) {
	d := deployment(t, valid)
	Deployments{}.PrepareForCreate(ctx, d)
	for path, want := range map[string]string{
		"spec.replicas": `1`, "spec.strategy.type": `"RollingUpdate"`,
		"spec.strategy.rollingUpdate.maxSurge": `"25%"`, "spec.revisionHistoryLimit": `10`,
		"status": ``, "spec.template.spec": `{"containers": []}`, "kind": `"Deployment"`,
	} {
		if got := text(t, d, splitPath(path)...); got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	if errs := (Deployments{}).Validate(ctx, d); errs != nil {
		t.Errorf("%v", errs)
	}
}

func TestExplicitReplicasAreKept(t *testing.T) {
	d := deployment(t, `{"spec":{"replicas":3}}`)
	Deployments{}.PrepareForCreate(ctx, d)
	if got := text(t, d, "spec", "replicas"); got != "3" {
		t.Errorf("replicas %s", got)
	}
}

func TestNegativeReplicasAndMismatchedSelectorAreInvalid(t *testing.T) {
	d := deployment(t, `{"spec":{"replicas":-1,"selector":{"matchLabels":{"app":"api"}},"template":{"metadata":{"labels":{"app":"web","tier":"fe"}}}}}`)
	want := "spec.replicas: Invalid value: -1: must be greater than or equal to 0\n" +
		"spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\", \"tier\":\"fe\"}: `selector` does not match template `labels`"
	if got := sdktest.Shown(Deployments{}.Validate(ctx, d)); got != want {
		t.Errorf("got\n%s", got)
	}
}

func TestMissingSelectorAndUnknownStrategyType(t *testing.T) {
	d := deployment(t, `{"spec":{"replicas":1,"strategy":{"type":"BlueGreen"}}}`)
	errs := Deployments{}.Validate(ctx, d)
	if len(errs) != 2 || errs[0].Kind != sdk.KindRequired || errs[1].Kind != sdk.KindNotSupported {
		t.Errorf("%s", sdktest.Shown(errs))
	}
}

func TestSelectorIsImmutableAndStatusKeptOnUpdate(t *testing.T) {
	old := deployment(t, valid)
	Deployments{}.PrepareForCreate(ctx, old)
	old.Set("status", map[string]any{"readyReplicas": 1})
	encoded, _ := old.MarshalJSON()
	newObj := deployment(t, string(encoded))
	newObj.Set("status", map[string]any{"readyReplicas": 100})
	newObj.Object("spec").Set("replicas", 5)
	Deployments{}.PrepareForUpdate(ctx, newObj, old)
	if got := text(t, newObj, "status"); got != `{"readyReplicas":1}` {
		t.Errorf("status %s", got)
	}
	if errs := (Deployments{}).ValidateUpdate(ctx, newObj, old); errs != nil {
		t.Errorf("%v", errs)
	}
	newObj.Object("spec", "selector", "matchLabels").Set("tier", "fe")
	want := `spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"fe"}}: field is immutable`
	if got := sdktest.Shown(Deployments{}.ValidateUpdate(ctx, newObj, old)); got != want {
		t.Errorf("got %s", got)
	}
}

func TestTheManifest(t *testing.T) {
	m, err := sdktest.Registered().Manifest()
	if err != nil {
		t.Fatal(err)
	}
	want := &abi.Manifest{
		ABIVersion: 1, ABIMinorVersion: sdk.ABIMinorVersion, Name: "deployments-go",
		Resources:     []abi.Resource{{Group: "apps.example.com", Version: "v1", Kind: "Deployment", Plural: "deployments", Scope: abi.ScopeNamespaced}},
		Operations:    sdk.BeforeWrite,
		HostFunctions: []abi.HostFunction{abi.HostFunctionLog},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v", m)
	}
}

// answer is a call's answer as the host receives it.
type answer struct {
	patch string // the answer's JSON Patch, byte for byte
	errs  string // sdktest.Shown of the field errors
	err   string // Response.error
}

func call(t *testing.T, arm abi.Arm, obj, old string) answer {
	t.Helper()
	req := &abi.Request{Arm: arm, Object: []byte(obj)}
	if old != "" {
		req.OldObject = []byte(old)
	}
	resp, err := sdktest.Registered().Call(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Object) > 0 || len(resp.Warnings) > 0 {
		t.Errorf("a whole object %s or warnings %v", resp.Object, resp.Warnings)
	}
	var errs []sdk.FieldError
	for _, fe := range resp.FieldErrors {
		errs = append(errs, sdk.FieldError{Kind: fe.Kind, Field: fe.Field, Detail: fe.Detail})
	}
	return answer{string(resp.ObjectPatch), sdktest.Shown(errs), resp.Error}
}

const defaults = `{"op":"add","path":"/spec/revisionHistoryLimit","value":10},{"op":"add","path":"/spec/progressDeadlineSeconds","value":600}`

func TestCreateAnswersOnlyItsDefaults(t *testing.T) {
	rolling := `{"op":"add","path":"/spec/strategy","value":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":"25%"}}}`
	for _, c := range []struct {
		name, in string
		want     answer
	}{
		{"valid", valid, answer{patch: `[{"op":"remove","path":"/status"},{"op":"add","path":"/spec/replicas","value":1},` + defaults + `,` + rolling + `]`}},
		{"nulls are absent", `{"spec":{"replicas":null,"selector":null,"strategy":null},"status":null}`, answer{
			patch: `[{"op":"remove","path":"/status"},{"op":"add","path":"/spec/replicas","value":1},{"op":"add","path":"/spec/strategy","value":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":"25%"}}},` + defaults + `]`,
			errs:  "spec.selector: Required value: selector is required"}},
		{"an existing strategy is opened", `{"spec":{"replicas":2,"selector":{"matchExpressions":[1]},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}}}`, answer{
			patch: `[{"op":"add","path":"/spec/strategy/rollingUpdate/maxUnavailable","value":"25%"},` + defaults + `]`}},
		{"recreate with rolling update", `{"spec":{"replicas":1,"selector":{"matchExpressions":[1]},"strategy":{"type":"Recreate","rollingUpdate":{}}}}`, answer{
			patch: `[` + defaults + `]`,
			errs:  "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"}},
		{"replicas of the wrong type", `{"spec":{"replicas":{"n":3},"selector":{"matchLabels":{"a":"b"}}}}`, answer{
			patch: `[` + defaults + `,` + rolling + `]`,
			errs: `spec.replicas: Invalid value: {"n":3}: must be an integer` + "\n" +
				"spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`"}},
		{"replicas beyond i64", `{"spec":{"replicas":9223372036854775808,"selector":{"matchExpressions":[1]}}}`, answer{
			patch: `[` + defaults + `,` + rolling + `]`,
			errs:  "spec.replicas: Invalid value: 9223372036854775808: must be an integer"}},
		{"unknown strategy type, quoted as Go does", `{"spec":{"replicas":1,"selector":{"matchExpressions":[1]},"strategy":{"type":"Blue\"Green\n\u0001é"}}}`, answer{
			patch: `[` + defaults + `]`,
			errs:  `spec.strategy.type: Unsupported value: "Blue\"Green\n\x01é": supported values: "Recreate", "RollingUpdate"`}},
		// Members of the wrong type are field errors, as the Rust module reports them.
		{"spec not an object", `{"spec":"web"}`, answer{errs: `spec: Invalid value: "web": must be an object`}},
		{"labels and type of the wrong type", `{"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":["app"]}},"strategy":{"type":7,"rollingUpdate":null}}}`, answer{
			patch: `[` + defaults + `]`,
			errs: "spec.template.metadata.labels: Invalid value: invalid type: sequence, expected a map\n" +
				"spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`\n" +
				"spec.strategy.type: Invalid value: invalid type: integer `7`, expected a string"}},
		{"a selector of the wrong type", `{"spec":{"replicas":1,"selector":"web"}}`, answer{
			patch: `[` + defaults + `,` + rolling + `]`,
			errs:  `spec.selector: Invalid value: invalid type: string "web", expected struct LabelSelector`}},
	} {
		if got := call(t, abi.ArmBeforeCreate, c.in, ""); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
	if got := call(t, abi.ArmBeforeCreate, `{"spec":`, ""); got.err == "" {
		t.Error("malformed JSON answered")
	}
}

func TestUpdateAnswers(t *testing.T) {
	old := `{"metadata":{"name":"web"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"},"matchExpressions":[1.0]},"template":{"metadata":{"labels":{"app":"web"}}}},"status":{"readyReplicas":1}}`
	for _, c := range []struct {
		name, in, old string
		want          answer
	}{
		{"status kept", `{"spec":{"replicas":5,"selector":{"matchLabels":{"app":"web"},"matchExpressions":[1.0]},"template":{"metadata":{"labels":{"app":"web"}}}},"status":{"readyReplicas":100}}`, old, answer{
			patch: `[{"op":"add","path":"/status","value":{"readyReplicas":1}}]`}},
		{"no defaults on update, no status", `{"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}}}},"status":{}}`, `{"spec":{"selector":{"matchLabels":{"app":"web"}}}}`, answer{
			patch: `[{"op":"remove","path":"/status"}]`,
			errs:  "spec.replicas: Required value: replicas is required"}},
		{"selector immutable, 1 is not 1.0", `{"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"},"matchExpressions":[1]},"template":{"metadata":{"labels":{"app":"web"}}}}}`, old, answer{
			patch: `[{"op":"add","path":"/status","value":{"readyReplicas":1}}]`,
			errs:  `spec.selector: Invalid value: {"matchLabels":{"app":"web"},"matchExpressions":[1]}: field is immutable`}},
		{"selector removed", `{"spec":{"replicas":1}}`, old, answer{
			patch: `[{"op":"add","path":"/status","value":{"readyReplicas":1}}]`,
			errs:  "spec.selector: Required value: selector is required\nspec.selector: Invalid value: null: field is immutable"}},
		{"empty equals absent", `{"spec":{"replicas":1,"selector":{"matchLabels":{},"matchExpressions":[1]}}}`, `{"spec":{"selector":{"matchExpressions":[1]}}}`, answer{}},
	} {
		if got := call(t, abi.ArmBeforeUpdate, c.in, c.old); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// Numbers compare as serde_json's: 1.0 and 1.00 are the same float, 1 and 1.0 are not.
func TestSelectorsCompareAsSerdeJSONValues(t *testing.T) {
	sel := func(exprs string) *LabelSelector {
		var l LabelSelector
		if err := l.UnmarshalJSON([]byte(`{"matchExpressions":` + exprs + `}`)); err != nil {
			t.Fatal(err)
		}
		return &l
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`[1.0]`, `[1.00]`, true}, {`[1]`, `[1.0]`, false}, {`[100.0]`, `[1e2]`, true},
		{`[-0]`, `[0.0]`, true}, {`[0]`, `[-0]`, false}, {`[18446744073709551616]`, `[1.8446744073709552e19]`, true},
		{`[{"a":[1,"x",null,true]}]`, `[{"a":[1,"x",null,true]}]`, true}, {`[{"a":1}]`, `[{"a":1,"b":2}]`, false},
		{`[]`, `[1]`, false},
	} {
		if got := selectorsEqual(sel(c.a), sel(c.b)); got != c.want {
			t.Errorf("%s == %s: %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if !selectorsEqual(nil, nil) || selectorsEqual(nil, sel(`[]`)) || !selectorsEqual(&LabelSelector{}, sel(`[]`)) {
		t.Error("absent and empty selectors")
	}
}

func TestTheDefaultsAnswerTheRest(t *testing.T) {
	h := sdktest.Registered()
	if ok, err := h.AllowCreateOnUpdate(); ok || err != nil {
		t.Errorf("allow create on update %v %v", ok, err)
	}
	if ok, err := h.AllowUnconditionalUpdate(); !ok || err != nil {
		t.Errorf("allow unconditional update %v %v", ok, err)
	}
	if got := call(t, abi.ArmWarningsOnCreate, valid, ""); got != (answer{}) {
		t.Errorf("warnings %+v", got)
	}
	if got := call(t, abi.ArmCanonicalize, `{"status":{"a":1}}`, ""); got != (answer{}) {
		t.Errorf("canonicalize %+v", got)
	}
}

func splitPath(path string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '.' {
			out = append(out, path[start:i])
			start = i + 1
		}
	}
	return out
}
