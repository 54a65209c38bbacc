package sdk_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"strategyhost.dev/sdk"
	"strategyhost.dev/sdk/abi"
	"strategyhost.dev/sdk/sdktest"
)

var gadgets = []sdk.Resource{{Group: "example.com", Version: "v1", Kind: "Gadget", Plural: "gadgets", Scope: sdk.Cluster}}

type object = map[string]any

// recording implements every hook, recording the calls and marking the object.
type recording struct {
	calls    []string
	invalid  bool
	failWith error
}

func (r *recording) note(s string) { r.calls = append(r.calls, s) }

func (r *recording) PrepareForCreate(_ *sdk.Context, o *object) {
	r.note("prepare")
	(*o)["prepared"] = true
}
func (r *recording) Validate(_ *sdk.Context, o *object) []sdk.FieldError {
	r.note("validate")
	if r.invalid {
		return []sdk.FieldError{sdk.Invalid(sdk.NewFieldPath("spec"), (*o)["spec"], "bad")}
	}
	return nil
}
func (r *recording) WarningsOnCreate(*sdk.Context, *object) []string {
	r.note("warnings")
	return []string{"w"}
}
func (r *recording) Canonicalize(_ *sdk.Context, o *object) {
	r.note("canonicalize")
	(*o)["canonical"] = true
}
func (r *recording) PrepareForUpdate(_ *sdk.Context, n, o *object) {
	r.note("prepareUpdate")
	(*n)["old"] = (*o)["v"]
}
func (r *recording) ValidateUpdate(_ *sdk.Context, n, _ *object) []sdk.FieldError {
	r.note("validateUpdate")
	if r.invalid {
		return []sdk.FieldError{sdk.Forbidden(sdk.NewFieldPath("spec"), "no")}
	}
	return nil
}
func (r *recording) WarningsOnUpdate(*sdk.Context, *object, *object) []string {
	r.note("warningsUpdate")
	return []string{"u"}
}
func (r *recording) AllowCreateOnUpdate() bool      { return true }
func (r *recording) AllowUnconditionalUpdate() bool { return false }
func (r *recording) BeforeDelete(*sdk.Context, *object) []sdk.FieldError {
	return []sdk.FieldError{sdk.Forbidden(sdk.NewFieldPath("metadata"), "keep")}
}
func (r *recording) AfterCreate(*sdk.Context, *object) error {
	r.note("afterCreate")
	return r.failWith
}
func (r *recording) AfterUpdate(*sdk.Context, *object, *object) error {
	r.note("afterUpdate")
	return r.failWith
}
func (r *recording) AfterDelete(*sdk.Context, *object) error {
	r.note("afterDelete")
	return r.failWith
}
func (r *recording) Convert(_ *sdk.Context, o object, to string) (object, error) {
	if o["fail"] != nil {
		return nil, errors.New("cannot")
	}
	o["apiVersion"] = to
	return o, nil
}

func harness(impl any) *sdktest.Harness {
	return sdktest.For(sdk.NewHandler(sdk.Strategy[object]{Name: "gadgets", Resources: gadgets, Impl: impl}))
}

func TestTheManifestListsBeforeWriteAndWhatIsImplemented(t *testing.T) {
	m := manifest(t, sdk.Strategy[object]{Name: "gadgets", Resources: gadgets, Impl: &recording{},
		HostFunctions: []sdk.HostFunction{sdk.HostGet, sdk.HostLog, sdk.HostApply, sdk.HostGet},
		Applies:       []sdk.GroupKind{{Group: "", Kind: "Namespace"}}})
	want := append(append([]abi.Operation{}, sdk.BeforeWrite...),
		abi.OperationBeforeDelete, abi.OperationAfterCreate, abi.OperationAfterUpdate,
		abi.OperationAfterDelete, abi.OperationConvert)
	if !reflect.DeepEqual(m.Operations, want) {
		t.Errorf("operations %v, want %v", m.Operations, want)
	}
	if want := []abi.HostFunction{sdk.HostLog, sdk.HostGet, sdk.HostApply}; !reflect.DeepEqual(m.HostFunctions, want) {
		t.Errorf("host functions %v, want %v", m.HostFunctions, want)
	}
	if m.ABIVersion != 1 || m.ABIMinorVersion != sdk.ABIMinorVersion || m.Name != "gadgets" {
		t.Errorf("got %+v", m)
	}
	if want := []abi.Resource{{Group: "example.com", Version: "v1", Kind: "Gadget", Plural: "gadgets", Scope: abi.ScopeCluster}}; !reflect.DeepEqual(m.Resources, want) {
		t.Errorf("resources %+v", m.Resources)
	}
	if want := []abi.GroupKind{{Group: "", Kind: "Namespace"}}; !reflect.DeepEqual(m.Applies, want) {
		t.Errorf("applies %+v", m.Applies)
	}

	// Nothing implemented: the before-write operations, as the Rust SDK's default; only log.
	m = manifest(t, sdk.Strategy[object]{Name: "nop", Resources: gadgets})
	if !reflect.DeepEqual(m.Operations, sdk.BeforeWrite) || !reflect.DeepEqual(m.HostFunctions, []abi.HostFunction{sdk.HostLog}) {
		t.Errorf("got %+v", m)
	}
	// An explicit list is taken as it is.
	m = manifest(t, sdk.Strategy[object]{Name: "nop", Resources: gadgets, Operations: []sdk.Operation{sdk.OpAfterCreate}, Impl: &recording{}})
	if !reflect.DeepEqual(m.Operations, []abi.Operation{abi.OperationAfterCreate}) {
		t.Errorf("got %v", m.Operations)
	}
}

func manifest(t *testing.T, s sdk.Strategy[object]) *abi.Manifest {
	t.Helper()
	m, err := sdktest.For(sdk.NewHandler(s)).Manifest()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type wrongType struct{}

func (wrongType) Validate(*sdk.Context, *map[string]string) []sdk.FieldError { return nil }

type wrongResult struct{}

func (wrongResult) AfterCreate(*sdk.Context, *object) {}

type pointerReceiver struct{}

func (*pointerReceiver) Validate(*sdk.Context, *object) []sdk.FieldError { return nil }

func TestNewHandlerRefusesWhatCannotLoad(t *testing.T) {
	for _, c := range []struct {
		name string
		s    sdk.Strategy[object]
		want string
	}{
		{"no name", sdk.Strategy[object]{Resources: gadgets}, "no Name"},
		{"no resources", sdk.Strategy[object]{Name: "x"}, "no Resources"},
		{"applies without apply", sdk.Strategy[object]{Name: "x", Resources: gadgets, Applies: []sdk.GroupKind{{Kind: "Namespace"}}}, "HostApply"},
		{"wrong object type", sdk.Strategy[object]{Name: "x", Resources: gadgets, Impl: wrongType{}}, "Validate of type func(sdk_test.wrongType, *sdk.Context, *map[string]string) []sdk.FieldError, which is not the hook Validate(*sdk.Context, *map[string]interface {}) []sdk.FieldError"},
		{"missing result", sdk.Strategy[object]{Name: "x", Resources: gadgets, Impl: wrongResult{}}, "not the hook AfterCreate(*sdk.Context, *map[string]interface {}) error"},
		{"pointer receiver", sdk.Strategy[object]{Name: "x", Resources: gadgets, Impl: pointerReceiver{}}, "pointer receiver"},
	} {
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(v.(string), c.want) {
					t.Errorf("%s: panicked with %v, want %q", c.name, v, c.want)
				}
			}()
			sdk.NewHandler(c.s)
		}()
	}
	sdk.NewHandler(sdk.Strategy[object]{Name: "x", Resources: gadgets, Impl: &pointerReceiver{}})
}

func TestWithoutHooksTheDefaultsAnswer(t *testing.T) {
	h := harness(nil)
	obj, errs, warnings, err := h.Create(`{"spec":{"n":1}}`)
	if err != nil || len(errs) != 0 || len(warnings) != 0 || !reflect.DeepEqual(obj, object{"spec": object{"n": jsonNumber("1")}}) {
		t.Errorf("create: %v %v %v %v", obj, errs, warnings, err)
	}
	if allowed, err := h.AllowCreateOnUpdate(); allowed || err != nil {
		t.Errorf("allow create on update: %v %v", allowed, err)
	}
	if allowed, err := h.AllowUnconditionalUpdate(); !allowed || err != nil {
		t.Errorf("allow unconditional update: %v %v", allowed, err)
	}
	if errs, err := h.Delete(`{}`); len(errs) != 0 || err != nil {
		t.Errorf("delete: %v %v", errs, err)
	}
	if err := h.AfterCreate(`{}`); err != nil {
		t.Error(err)
	}
	if _, err := h.Convert("example.com/v2", `{}`); err == nil || err.Error() != "this module does not convert objects" {
		t.Errorf("convert: %v", err)
	}
}

func TestTheCreatePhaseRunsWarningsAndCanonicalizeOnlyWhenValid(t *testing.T) {
	r := &recording{}
	obj, errs, warnings, err := harness(r).Create(`{"a":1}`)
	if err != nil || len(errs) != 0 || !reflect.DeepEqual(warnings, []string{"w"}) {
		t.Fatalf("%v %v %v", errs, warnings, err)
	}
	if want := (object{"a": jsonNumber("1"), "prepared": true, "canonical": true}); !reflect.DeepEqual(obj, want) {
		t.Errorf("object %v, want %v", obj, want)
	}
	if want := "prepare validate warnings canonicalize"; strings.Join(r.calls, " ") != want {
		t.Errorf("calls %v, want %s", r.calls, want)
	}

	r = &recording{invalid: true}
	obj, errs, warnings, err = harness(r).Create(`{"a":1}`)
	if err != nil || sdktest.Shown(errs) != "spec: Invalid value: null: bad" || warnings != nil {
		t.Fatalf("%v %v %v", errs, warnings, err)
	}
	if want := (object{"a": jsonNumber("1"), "prepared": true}); !reflect.DeepEqual(obj, want) {
		t.Errorf("object %v, want %v", obj, want)
	}
	if want := "prepare validate"; strings.Join(r.calls, " ") != want {
		t.Errorf("calls %v, want %s", r.calls, want)
	}
}

func TestTheUpdatePhaseSeesTheOldObject(t *testing.T) {
	r := &recording{}
	obj, errs, warnings, err := harness(r).Update(`{"v":2}`, `{"v":1}`)
	if err != nil || len(errs) != 0 || !reflect.DeepEqual(warnings, []string{"u"}) {
		t.Fatalf("%v %v %v", errs, warnings, err)
	}
	if want := (object{"v": jsonNumber("2"), "old": jsonNumber("1"), "canonical": true}); !reflect.DeepEqual(obj, want) {
		t.Errorf("object %v, want %v", obj, want)
	}
	r = &recording{invalid: true}
	obj, errs, _, _ = harness(r).Update(`{"v":2}`, `{"v":1}`)
	if sdktest.Shown(errs) != "spec: Forbidden: no" || obj["canonical"] != nil {
		t.Errorf("%v %v", obj, errs)
	}
	if want := "prepareUpdate validateUpdate"; strings.Join(r.calls, " ") != want {
		t.Errorf("calls %v, want %s", r.calls, want)
	}
}

func TestSingleOperations(t *testing.T) {
	h := harness(&recording{invalid: true})
	for _, c := range []struct {
		arm  abi.Arm
		old  any
		want string
	}{
		{abi.ArmPrepareForCreate, nil, `object map[a:1 prepared:true]`},
		{abi.ArmValidate, nil, `errors spec: Invalid value: null: bad`},
		{abi.ArmWarningsOnCreate, nil, `warnings [w]`},
		{abi.ArmCanonicalize, nil, `object map[a:1 canonical:true]`},
		{abi.ArmPrepareForUpdate, `{"v":0}`, `object map[a:1 old:0]`},
		{abi.ArmValidateUpdate, `{}`, `errors spec: Forbidden: no`},
		{abi.ArmWarningsOnUpdate, `{}`, `warnings [u]`},
		{abi.ArmBeforeDelete, nil, `errors metadata: Forbidden: keep`},
		{abi.ArmAllowCreateOnUpdate, nil, `allowed true`},
		{abi.ArmAllowUnconditionalUpdate, nil, `allowed false`},
	} {
		var obj any = `{"a":1}`
		if abi.ArmIsEmpty(c.arm) {
			obj = nil
		}
		r, err := h.Op(c.arm, obj, c.old)
		if err != nil {
			t.Errorf("%v: %v", c.arm, err)
			continue
		}
		var got string
		switch strings.Fields(c.want)[0] {
		case "object":
			got = "object " + fmtValue(r.Object)
		case "errors":
			got = "errors " + sdktest.Shown(r.FieldErrors)
		case "warnings":
			got = "warnings " + fmtValue(r.Warnings)
		case "allowed":
			got = "allowed " + fmtValue(r.Allowed)
		}
		if got != c.want {
			t.Errorf("%v: got %s, want %s", c.arm, got, c.want)
		}
		if strings.HasPrefix(c.want, "object") == (r.Object == nil) {
			t.Errorf("%v: object %v", c.arm, r.Object)
		}
	}
}

func TestFailuresAnswerAnError(t *testing.T) {
	h := harness(&recording{failWith: errors.New("hook failed")})
	call := func(req *abi.Request) string {
		resp, err := h.Call(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Error
	}
	for _, c := range []struct {
		name string
		req  *abi.Request
		want string
	}{
		{"bad object", &abi.Request{Arm: abi.ArmBeforeCreate, Object: []byte(`{"a":`)}, "the object did not decode: unexpected EOF"},
		{"no object", &abi.Request{Arm: abi.ArmValidate}, "the object did not decode: EOF while parsing a value"},
		{"trailing", &abi.Request{Arm: abi.ArmValidate, Object: []byte(`{} {}`)}, "the object did not decode: trailing characters"},
		{"not an object", &abi.Request{Arm: abi.ArmValidate, Object: []byte(`[1]`)}, "the object did not decode: json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{"bad old object", &abi.Request{Arm: abi.ArmBeforeUpdate, Object: []byte(`{}`), OldObject: []byte(`x`)}, "the old object did not decode: invalid character 'x' looking for beginning of value"},
		{"after hook", &abi.Request{Arm: abi.ArmAfterCreate, Object: []byte(`{}`)}, "hook failed"},
		{"after update", &abi.Request{Arm: abi.ArmAfterUpdate, Object: []byte(`{}`), OldObject: []byte(`{}`)}, "hook failed"},
		{"after delete", &abi.Request{Arm: abi.ArmAfterDelete, Object: []byte(`{}`)}, "hook failed"},
		{"admit", &abi.Request{Arm: abi.ArmAdmit, Admit: &abi.AdmitRequest{Operation: "CREATE"}}, "a strategy is not an admission policy"},
		{"no operation", &abi.Request{}, "the request names no operation"},
		{"convert", &abi.Request{Arm: abi.ArmConvert, Convert: &abi.ConvertRequest{Objects: [][]byte{[]byte(`{}`), []byte(`{"fail":1}`)}}}, "cannot"},
	} {
		if got := call(c.req); got != c.want {
			t.Errorf("%s: error %q, want %q", c.name, got, c.want)
		}
	}
	var resp abi.Response
	if err := resp.Unmarshal(sdk.NewHandler(sdk.Strategy[object]{Name: "x", Resources: gadgets}).Handle([]byte{0xff})); err != nil || !strings.HasPrefix(resp.Error, "the request did not decode: ") {
		t.Errorf("garbage: %+v %v", resp, err)
	}
}

type panicking struct{}

func (panicking) Validate(*sdk.Context, *object) []sdk.FieldError { panic("boom") }

func TestAPanicInAHookIsAnErrorAndLogged(t *testing.T) {
	sdktest.ResetHost()
	_, _, _, err := harness(panicking{}).Create(`{}`)
	if err == nil || err.Error() != "panic: boom" {
		t.Errorf("got %v", err)
	}
	logs := sdktest.TakeLogs()
	if len(logs) != 1 || logs[0].Level != sdk.LevelError || !strings.HasPrefix(logs[0].Message, "panic: boom (in BeforeCreate)\n") || !strings.Contains(logs[0].Message, "Validate") {
		t.Errorf("logs %v", logs)
	}
}

func TestConvertAnswersEveryObjectInOrder(t *testing.T) {
	out, err := harness(&recording{}).Convert("example.com/v2", `{"n":1}`, `{"n":2}`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []object{{"n": jsonNumber("1"), "apiVersion": "example.com/v2"}, {"n": jsonNumber("2"), "apiVersion": "example.com/v2"}}; !reflect.DeepEqual(out, want) {
		t.Errorf("got %v", out)
	}
}

func TestNumbersAndTextSurviveExactly(t *testing.T) {
	in := `{"big":12345678901234567890,"f":1.50,"e":1E+2,"neg":-0,"s":"<a & b>","u":"é\u2028"}`
	resp, err := harness(nil).Call(&abi.Request{Arm: abi.ArmPrepareForCreate, Object: []byte(in)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"big":12345678901234567890,"e":1E+2,"f":1.50,"neg":-0,"s":"<a & b>","u":"é` + "\u2028" + `"}`; string(resp.Object) != want {
		t.Errorf("got %s, want %s", resp.Object, want)
	}
}

type contextual struct{ seen *sdk.Context }

func (c *contextual) Validate(ctx *sdk.Context, _ *object) []sdk.FieldError {
	c.seen = ctx
	return nil
}

func TestTheContextIsDecoded(t *testing.T) {
	c := &contextual{}
	h := harness(c)
	h.Context.DryRun = true
	h.Context.RequestID = "r-1"
	h.Context.User = sdk.UserInfo{Username: "system:serviceaccount:ns:builder", UID: "u-1",
		Groups: []string{"system:serviceaccounts"},
		Extra:  map[string][]string{"authentication.kubernetes.io/pod-name": {"builder-0"}}}
	if _, err := h.Op(abi.ArmValidate, `{}`, nil); err != nil {
		t.Fatal(err)
	}
	want := &sdk.Context{
		Resource: sdk.ResourceInfo{Group: "example.com", Version: "v1", Kind: "Gadget", Plural: "gadgets", Namespaced: false},
		DryRun:   true, RequestID: "r-1", User: h.Context.User,
	}
	if !reflect.DeepEqual(c.seen, want) {
		t.Errorf("got %+v, want %+v", c.seen, want)
	}
	if !c.seen.User.InGroup("system:serviceaccounts") || c.seen.User.InGroup("admins") {
		t.Error("InGroup")
	}
	// A host before ABI 1.1 sends no user; without a context at all the resource reads as
	// namespaced (the scope is unspecified), as in the Rust SDK.
	if _, err := h.Call(&abi.Request{Context: &abi.Context{RequestID: "r"}, Arm: abi.ArmValidate, Object: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.seen, &sdk.Context{RequestID: "r", Resource: sdk.ResourceInfo{Namespaced: true}}) {
		t.Errorf("got %+v", c.seen)
	}
}

// A typed object: its own fields, ObjectMeta, and the rest kept.
type gadget struct {
	Metadata sdk.ObjectMeta
	Size     int64
	Rest     map[string]any
}

func (g *gadget) UnmarshalJSON(data []byte) error {
	*g = gadget{}
	rest, err := sdk.DecodeObject(data, "struct Gadget", []string{"metadata", "size"}, func(name string, raw []byte) error {
		if name == "metadata" {
			return g.Metadata.UnmarshalJSON(raw)
		}
		return sdk.DecodeJSON(raw, &g.Size)
	})
	g.Rest = rest
	return err
}

func (g gadget) MarshalJSON() ([]byte, error) {
	return sdk.JoinObject([]sdk.Member{{Name: "metadata", Value: g.Metadata}, {Name: "size", Value: g.Size}}, g.Rest)
}

type typedGadgets struct{}

func (typedGadgets) PrepareForCreate(_ *sdk.Context, g *gadget) {
	if g.Size == 0 {
		g.Size = 1
	}
	if g.Metadata.Labels == nil {
		g.Metadata.Labels = map[string]string{}
	}
	g.Metadata.Labels["size"] = "set"
}

func TestTypedObjectsKeepWhatTheyDoNotName(t *testing.T) {
	h := sdktest.For(sdk.NewHandler(sdk.Strategy[gadget]{Name: "g", Resources: gadgets, Impl: typedGadgets{}}))
	resp, err := h.Call(&abi.Request{Arm: abi.ArmBeforeCreate, Object: []byte(`{"kind":"Gadget","metadata":{"name":"a","uid":"u"},"spec":{"x":[1.0]},"apiVersion":"example.com/v1"}`)})
	if err != nil || resp.Error != "" {
		t.Fatal(err, resp.Error)
	}
	if want := `{"metadata":{"name":"a","labels":{"size":"set"},"uid":"u"},"size":1,"apiVersion":"example.com/v1","kind":"Gadget","spec":{"x":[1.0]}}`; string(resp.Object) != want {
		t.Errorf("got  %s\nwant %s", resp.Object, want)
	}
	_, _, _, err = h.Create(`{"metadata":{"name":null}}`)
	if err == nil || err.Error() != "the object did not decode: invalid type: null, expected a string at line 1 column 24" {
		t.Errorf("got %v", err)
	}
}

// copied decodes its metadata from a copy of the input: its errors cannot say where they arose.
type copied struct{ Metadata sdk.ObjectMeta }

func (c *copied) UnmarshalJSON(data []byte) error {
	_, err := sdk.DecodeObject(data, "struct Copied", []string{"metadata"}, func(_ string, raw []byte) error {
		return c.Metadata.UnmarshalJSON(append([]byte(nil), raw...))
	})
	return err
}

func TestDecodeErrorsSayWhereAsSerdeJSONDoes(t *testing.T) {
	h := sdktest.For(sdk.NewHandler(sdk.Strategy[gadget]{Name: "g", Resources: gadgets}))
	for in, want := range map[string]string{
		"{\n  \"metadata\": {\"name\": null}\n}":                 "invalid type: null, expected a string at line 2 column 27",
		`{"metadata":{"labels":[]}}`:                             "invalid type: sequence, expected a map at line 1 column 22",
		`{"metadata":{},"metadata":{}}`:                          "duplicate field `metadata` at line 1 column 25",
		`{"size":1,"metadata":{"name":"\u00e9\n"},"metadata":1}`: "duplicate field `metadata` at line 1 column 51",
		` {"metadata":true}`:                                     "invalid type: boolean `true`, expected struct ObjectMeta at line 1 column 17",
	} {
		if _, _, _, err := h.Create(in); errString(err) != "the object did not decode: "+want {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
	h = sdktest.For(sdk.NewHandler(sdk.Strategy[copied]{Name: "c", Resources: gadgets}))
	if _, _, _, err := h.Create(`{"metadata":{"name":null}}`); errString(err) != "the object did not decode: invalid type: null, expected a string" {
		t.Errorf("got %v", err)
	}
}
