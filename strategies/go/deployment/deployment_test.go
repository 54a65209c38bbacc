package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"strategyhost.dev/sdk"
	"strategyhost.dev/sdk/abi"
	"strategyhost.dev/sdk/sdktest"
)

// The Rust module's tests (strategies/deployment/src/tests.rs), ported.

func deployment(t *testing.T, v string) Deployment {
	t.Helper()
	var d Deployment
	if err := sdk.DecodeJSON([]byte(v), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func toValue(t *testing.T, d Deployment) map[string]any {
	t.Helper()
	data, err := sdk.EncodeJSON(d)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := sdk.DecodeJSON(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func at(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

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

func TestCreateAppliesDefaultsAndClearsStatus(t *testing.T) {
	d := deployment(t, valid)
	Deployments{}.PrepareForCreate(ctx, &d)
	v := toValue(t, d)
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"spec", "replicas"}, json.Number("1")},
		{[]string{"spec", "strategy", "type"}, "RollingUpdate"},
		{[]string{"spec", "strategy", "rollingUpdate", "maxSurge"}, "25%"},
		{[]string{"spec", "revisionHistoryLimit"}, json.Number("10")},
		{[]string{"kind"}, "Deployment"},
	} {
		if got := at(v, c.path...); got != c.want {
			t.Errorf("%v = %#v, want %#v", c.path, got, c.want)
		}
	}
	if _, ok := v["status"]; ok {
		t.Error("status kept")
	}
	if got := at(v, "spec", "template", "spec"); !reflect.DeepEqual(got, map[string]any{"containers": []any{}}) {
		t.Errorf("unknown fields not kept: %v", got)
	}
	if errs := (Deployments{}).Validate(ctx, &d); len(errs) != 0 {
		t.Errorf("errors %v", errs)
	}
}

func TestExplicitReplicasAreKept(t *testing.T) {
	d := deployment(t, `{"spec": {"replicas": 3}}`)
	Deployments{}.PrepareForCreate(ctx, &d)
	if d.Spec.Replicas != json.Number("3") {
		t.Errorf("replicas %v", d.Spec.Replicas)
	}
}

func TestNegativeReplicasAndMismatchedSelectorAreInvalid(t *testing.T) {
	d := deployment(t, valid)
	d.Spec.Replicas = json.Number("-1")
	d.Spec.Selector.MatchLabels["app"] = "api"
	errs := Deployments{}.Validate(ctx, &d)
	want := "spec.replicas: Invalid value: -1: must be greater than or equal to 0\n" +
		"spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\", \"tier\":\"fe\"}: `selector` does not match template `labels`"
	if got := sdktest.Shown(errs); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestMissingSelectorAndUnknownStrategyType(t *testing.T) {
	d := deployment(t, valid)
	d.Spec.Replicas = json.Number("1")
	d.Spec.Selector = nil
	d.Spec.Strategy = &RolloutStrategy{Type: ptr("BlueGreen")}
	errs := Deployments{}.Validate(ctx, &d)
	if len(errs) != 2 || errs[0].Kind != sdk.KindRequired || errs[1].Kind != sdk.KindNotSupported {
		t.Errorf("got %v", errs)
	}
}

func TestSelectorIsImmutableAndStatusKeptOnUpdate(t *testing.T) {
	old := deployment(t, valid)
	Deployments{}.PrepareForCreate(ctx, &old)
	old.Status = map[string]any{"readyReplicas": json.Number("1")}

	data, _ := sdk.EncodeJSON(old)
	newObj := deployment(t, string(data))
	newObj.Status = map[string]any{"readyReplicas": json.Number("100")}
	newObj.Spec.Replicas = json.Number("5")
	Deployments{}.PrepareForUpdate(ctx, &newObj, &old)
	if !reflect.DeepEqual(newObj.Status, map[string]any{"readyReplicas": json.Number("1")}) {
		t.Errorf("status %v", newObj.Status)
	}
	if errs := (Deployments{}).ValidateUpdate(ctx, &newObj, &old); len(errs) != 0 {
		t.Errorf("errors %v", errs)
	}

	newObj.Spec.Selector.MatchLabels["tier"] = "fe"
	errs := Deployments{}.ValidateUpdate(ctx, &newObj, &old)
	if got := sdktest.Shown(errs); got != `spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"fe"}}: field is immutable` {
		t.Errorf("got %v", errs)
	}
}

// Through the ABI, as the host calls the module: exact answers, as the Rust module gave them on
// typed structs (the README says where it now differs).

const defaults = `"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"}},"revisionHistoryLimit":10,"progressDeadlineSeconds":600`

func TestTheManifest(t *testing.T) {
	m, err := sdktest.Registered().Manifest()
	if err != nil {
		t.Fatal(err)
	}
	want := &abi.Manifest{
		ABIVersion: 1, ABIMinorVersion: 3, Name: "deployments-go",
		Resources:     []abi.Resource{{Group: "apps.example.com", Version: "v1", Kind: "Deployment", Plural: "deployments", Scope: abi.ScopeNamespaced}},
		Operations:    sdk.BeforeWrite,
		HostFunctions: []abi.HostFunction{abi.HostFunctionLog},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v", m)
	}
}

type answer struct {
	object string // the answer's object, byte for byte ("" when none)
	errs   string // sdktest.Shown of the field errors
	err    string // Response.error
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
	var errs []sdk.FieldError
	for _, fe := range resp.FieldErrors {
		errs = append(errs, sdk.FieldError{Kind: fe.Kind, Field: fe.Field, Detail: fe.Detail})
	}
	if len(resp.Warnings) > 0 {
		t.Errorf("warnings %v", resp.Warnings)
	}
	return answer{string(resp.Object), sdktest.Shown(errs), resp.Error}
}

func TestCreateAnswers(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     answer
	}{
		{"valid", valid, answer{object: `{"metadata":{"name":"web","namespace":"default"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web","tier":"fe"}},"spec":{"containers":[]}},` + defaults + `},"apiVersion":"apps.example.com/v1","kind":"Deployment"}`}},
		{"empty", `{}`, answer{
			object: `{"metadata":{},"spec":{"replicas":1,"template":{"metadata":{}},` + defaults + `}}`,
			errs:   "spec.selector: Required value: selector is required"}},
		{"nulls are absent", `{"spec":{"replicas":null,"selector":null,"strategy":null,"revisionHistoryLimit":null,"progressDeadlineSeconds":null},"status":null}`, answer{
			object: `{"metadata":{},"spec":{"replicas":1,"template":{"metadata":{}},` + defaults + `}}`,
			errs:   "spec.selector: Required value: selector is required"}},
		{"empty names and maps are dropped, case matters", `{"metadata":{"name":"","labels":{},"annotations":{},"uid":"u"},"Spec":{"replicas":3},"spec":{"selector":{"matchLabels":{},"matchExpressions":[]},"template":{"metadata":{"namespace":""},"x":1},"strategy":{"type":"RollingUpdate","foo":1,"rollingUpdate":{"maxSurge":null}},"paused":true}}`, answer{
			object: `{"metadata":{"uid":"u"},"spec":{"replicas":1,"selector":{},"template":{"metadata":{},"x":1},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":null,"maxUnavailable":"25%"}},"revisionHistoryLimit":10,"progressDeadlineSeconds":600,"paused":true},"Spec":{"replicas":3}}`,
			errs:   "spec.selector: Invalid value: {}: empty selector is invalid for deployment"}},
		{"match expressions only, extra selector members dropped", `{"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"Exists"}],"extra":1},"revisionHistoryLimit":3,"progressDeadlineSeconds":-5}}`, answer{
			object: `{"metadata":{},"spec":{"replicas":1,"selector":{"matchExpressions":[{"key":"a","operator":"Exists"}]},"template":{"metadata":{}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"}},"revisionHistoryLimit":3,"progressDeadlineSeconds":-5}}`}},
		{"selectors as arrays", `{"spec":{"selector":[{"app":"web"}],"template":{"metadata":{"labels":{"app":"web"}}},"strategy":["Recreate"]}}`, answer{
			object: `{"metadata":{},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}}},"strategy":{"type":"Recreate"},"revisionHistoryLimit":10,"progressDeadlineSeconds":600}}`}},
		{"replicas of the wrong type", `{"spec":{"replicas":"3","selector":{"matchLabels":{"a":"b"}}}}`, answer{
			object: `{"metadata":{},"spec":{"replicas":"3","selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{}},` + defaults + `}}`,
			errs: `spec.replicas: Invalid value: "3": must be an integer` + "\n" +
				"spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`"}},
		{"replicas as a float", `{"spec":{"replicas":1.0,"selector":{"matchExpressions":[1]}}}`, answer{
			object: `{"metadata":{},"spec":{"replicas":1.0,"selector":{"matchExpressions":[1]},"template":{"metadata":{}},` + defaults + `}}`,
			errs:   "spec.replicas: Invalid value: 1: must be an integer"}},
		{"replicas beyond i64", `{"spec":{"replicas":9223372036854775808,"selector":{"matchExpressions":[1]}}}`, answer{
			object: `{"metadata":{},"spec":{"replicas":9223372036854775808,"selector":{"matchExpressions":[1]},"template":{"metadata":{}},` + defaults + `}}`,
			errs:   "spec.replicas: Invalid value: 9223372036854775808: must be an integer"}},
		{"largest replicas", `{"spec":{"replicas":9223372036854775807,"selector":{"matchExpressions":[1]}}}`, answer{
			object: `{"metadata":{},"spec":{"replicas":9223372036854775807,"selector":{"matchExpressions":[1]},"template":{"metadata":{}},` + defaults + `}}`}},
		{"negative replicas", `{"spec":{"replicas":-9223372036854775808,"selector":{"matchExpressions":[1]}}}`, answer{
			object: `{"metadata":{},"spec":{"replicas":-9223372036854775808,"selector":{"matchExpressions":[1]},"template":{"metadata":{}},` + defaults + `}}`,
			errs:   "spec.replicas: Invalid value: -9223372036854775808: must be greater than or equal to 0"}},
		{"recreate with rolling update", `{"spec":{"selector":{"matchExpressions":[1]},"strategy":{"type":"Recreate","rollingUpdate":{}}}}`, answer{
			object: `{"metadata":{},"spec":{"replicas":1,"selector":{"matchExpressions":[1]},"template":{"metadata":{}},"strategy":{"type":"Recreate","rollingUpdate":{}},"revisionHistoryLimit":10,"progressDeadlineSeconds":600}}`,
			errs:   "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"}},
		{"recreate with null rolling update", `{"spec":{"selector":{"matchExpressions":[1]},"strategy":{"type":"Recreate","rollingUpdate":null}}}`, answer{
			object: `{"metadata":{},"spec":{"replicas":1,"selector":{"matchExpressions":[1]},"template":{"metadata":{}},"strategy":{"type":"Recreate"},"revisionHistoryLimit":10,"progressDeadlineSeconds":600}}`}},
		{"unknown strategy type, quoted as Go does", `{"spec":{"selector":{"matchExpressions":[1]},"strategy":{"type":"Blue\"Green\n\u0001é\u0301\u00a0<>"}}}`, answer{
			object: `{"metadata":{},"spec":{"replicas":1,"selector":{"matchExpressions":[1]},"template":{"metadata":{}},"strategy":{"type":"Blue\"Green\n\u0001é` + "\u0301\u00a0" + `<>"},"revisionHistoryLimit":10,"progressDeadlineSeconds":600}}`,
			errs:   `spec.strategy.type: Unsupported value: "Blue\"Green\n\x01é` + "\u0301" + `\u00a0<>": supported values: "Recreate", "RollingUpdate"`}},
	} {
		if got := call(t, abi.ArmBeforeCreate, c.in, ""); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func TestWhatDoesNotDecodeIsAnError(t *testing.T) {
	for in, want := range map[string]string{
		`{"metadata":{"name":null}}`:                                "invalid type: null, expected a string at line 1 column 24",
		`{"metadata":null}`:                                         "invalid type: null, expected struct ObjectMeta at line 1 column 16",
		`{"metadata":{"labels":{"a":1}}}`:                           "invalid type: integer `1`, expected a string at line 1 column 28",
		`{"spec":null}`:                                             "invalid type: null, expected struct DeploymentSpec at line 1 column 12",
		`{"spec":[]}`:                                               "invalid type: sequence, expected struct DeploymentSpec at line 1 column 8",
		`{"spec":{"template":null}}`:                                "invalid type: null, expected struct PodTemplate at line 1 column 24",
		`{"spec":{"template":{"metadata":{"labels":null}}}}`:        "invalid type: null, expected a map at line 1 column 46",
		`{"spec":{"selector":{"matchLabels":null}}}`:                "invalid type: null, expected a map at line 1 column 39",
		`{"spec":{"selector":{"matchExpressions":null}}}`:           "invalid type: null, expected a sequence at line 1 column 44",
		`{"spec":{"selector":{"matchExpressions":{}}}}`:             "invalid type: map, expected a sequence at line 1 column 40",
		`{"spec":{"selector":"web"}}`:                               `invalid type: string "web", expected struct LabelSelector at line 1 column 25`,
		`{"spec":{"selector":[{},[],1]}}`:                           "trailing characters at line 1 column 28",
		`{"spec":{"selector":{"matchLabels":{},"matchLabels":{}}}}`: "duplicate field `matchLabels` at line 1 column 51",
		`{"spec":{"strategy":{"type":1}}}`:                          "invalid type: integer `1`, expected a string at line 1 column 29",
		`{"spec":{"strategy":{"rollingUpdate":[]}}}`:                "invalid type: sequence, expected a map at line 1 column 37",
		`{"spec":{"strategy":true}}`:                                "invalid type: boolean `true`, expected struct RolloutStrategy at line 1 column 24",
		`{"spec":{"revisionHistoryLimit":1.5}}`:                     "invalid type: floating point `1.5`, expected i64 at line 1 column 35",
		`{"spec":{"revisionHistoryLimit":-0}}`:                      "invalid type: floating point `-0.0`, expected i64 at line 1 column 34",
		`{"spec":{"revisionHistoryLimit":"10"}}`:                    `invalid type: string "10", expected i64 at line 1 column 36`,
		`{"spec":{"progressDeadlineSeconds":9223372036854775808}}`:  "invalid value: integer `9223372036854775808`, expected i64 at line 1 column 54",
		`{"spec":{},"spec":{}}`:                                     "duplicate field `spec` at line 1 column 17",
		// The first problem in the document is the one reported, as serde reads in order.
		`{"spec":{"template":null},"metadata":null}`: "invalid type: null, expected struct PodTemplate at line 1 column 24",
		`{"metadata":null,"spec":{"template":null}}`: "invalid type: null, expected struct ObjectMeta at line 1 column 16",
		`{"spec":null,"spec":{}}`:                    "invalid type: null, expected struct DeploymentSpec at line 1 column 12",
		`{"spec":{"strategy":[1,{}]}}`:               "invalid type: integer `1`, expected a string at line 1 column 22",
		`{"spec":{"strategy":[null,{},3]}}`:          "trailing characters at line 1 column 30",
		`[]`:                                         "invalid type: sequence, expected struct Deployment at line 1 column 0",
		`null`:                                       "invalid type: null, expected struct Deployment at line 1 column 4",
	} {
		if got := call(t, abi.ArmBeforeCreate, in, ""); got != (answer{err: "the object did not decode: " + want}) {
			t.Errorf("%s: got %+v, want %q", in, got, want)
		}
	}
}

func TestUpdateAnswers(t *testing.T) {
	old := `{"apiVersion":"apps.example.com/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"},"matchExpressions":[1.0]},"template":{"metadata":{"labels":{"app":"web"}}}},"status":{"readyReplicas":1}}`
	for _, c := range []struct {
		name, in, old string
		want          answer
	}{
		{"status kept", `{"metadata":{"name":"web"},"spec":{"replicas":5,"selector":{"matchLabels":{"app":"web"},"matchExpressions":[1.0]},"template":{"metadata":{"labels":{"app":"web"}}}},"status":{"readyReplicas":100}}`, old, answer{
			object: `{"metadata":{"name":"web"},"spec":{"replicas":5,"selector":{"matchLabels":{"app":"web"},"matchExpressions":[1.0]},"template":{"metadata":{"labels":{"app":"web"}}}},"status":{"readyReplicas":1}}`}},
		{"no defaults on update, no status", `{"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}}}}}`, `{"spec":{"selector":{"matchLabels":{"app":"web"}}},"status":null}`, answer{
			object: `{"metadata":{},"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}}}}}`,
			errs:   "spec.replicas: Required value: replicas is required"}},
		{"selector immutable, 1 is not 1.0", `{"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"},"matchExpressions":[1]},"template":{"metadata":{"labels":{"app":"web"}}}}}`, old, answer{
			object: `{"metadata":{},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"},"matchExpressions":[1]},"template":{"metadata":{"labels":{"app":"web"}}}},"status":{"readyReplicas":1}}`,
			errs:   `spec.selector: Invalid value: {"matchLabels":{"app":"web"},"matchExpressions":[1]}: field is immutable`}},
		{"selector removed", `{"spec":{"replicas":1}}`, old, answer{
			object: `{"metadata":{},"spec":{"replicas":1,"template":{"metadata":{}}},"status":{"readyReplicas":1}}`,
			errs:   "spec.selector: Required value: selector is required\nspec.selector: Invalid value: null: field is immutable"}},
		{"empty equals absent", `{"spec":{"replicas":1,"selector":{"matchLabels":{},"matchExpressions":[1]}}}`, `{"spec":{"selector":{"matchExpressions":[1]}}}`, answer{
			object: `{"metadata":{},"spec":{"replicas":1,"selector":{"matchExpressions":[1]},"template":{"metadata":{}}}}`}},
		{"old does not decode", `{}`, `{"spec":null}`, answer{err: "the old object did not decode: invalid type: null, expected struct DeploymentSpec at line 1 column 12"}},
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
	// Canonicalize only re-encodes: the status stays (it is not a create).
	if got := call(t, abi.ArmCanonicalize, `{"status":{"a":1}}`, ""); got.object != `{"metadata":{},"spec":{"template":{"metadata":{}}},"status":{"a":1}}` {
		t.Errorf("canonicalize %+v", got)
	}
	if got := call(t, abi.ArmValidate, `{"spec":{"replicas":-1,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}}}}}`, ""); got != (answer{errs: "spec.replicas: Invalid value: -1: must be greater than or equal to 0"}) {
		t.Errorf("validate %+v", got)
	}
}
