package sdk_test

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"strategyhost.dev/sdk"
	"strategyhost.dev/sdk/abi"
	"strategyhost.dev/sdk/sdktest"
)

func parse(t *testing.T, text string) *sdk.LazyObject {
	t.Helper()
	o, err := sdk.ParseLazyObject([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestALazyObjectReadsOnlyWhatItIsAsked(t *testing.T) {
	o := parse(t, `{"kind":"Deployment","spec":{"replicas":null,"template":{"metadata":{"labels":{"app":"web"}}}}}`)
	raw, err := o.Raw("spec", "template", "metadata", "labels")
	labels, _ := sdk.DecodeStringMap(raw)
	if err != nil || labels["app"] != "web" {
		t.Errorf("labels %v, %v", labels, err)
	}
	if raw, err := o.Raw("spec", "replicas"); raw != nil || err != nil {
		t.Errorf("a null member reads as absent: %s, %v", raw, err)
	}
	var kind string
	if found, err := o.Get(&kind, "kind"); !found || err != nil || kind != "Deployment" {
		t.Errorf("kind %q %v %v", kind, found, err)
	}
	_, err = o.Raw("kind", "name")
	var me *sdk.MemberError
	if !errors.As(err, &me) || me.Error() != "kind: expected an object, found a string" {
		t.Errorf("a string has no members: %v", err)
	}
	var n int64
	if _, err := o.Get(&n, "spec", "template"); err == nil || !strings.HasPrefix(err.Error(), "spec.template: ") {
		t.Errorf("an object into an int: %v", err)
	}
	if !o.Has("spec", "template") || o.Has("spec", "replicas") || o.Has("nope", "x") {
		t.Error("Has")
	}
}

func TestStringAtReadsStringsTheInputHoldsOrTheStrategySet(t *testing.T) {
	o := parse(t, `{"a":"plain","b":"esc\u00e9\"q","c":null,"d":5,"e":{"f":"g"},"h":"x"}`)
	o.Set("h", "set")
	o.Set("i", "new\n")
	for _, c := range []struct {
		path      []string
		want, err string
	}{
		{[]string{"a"}, "plain", ""},
		{[]string{"b"}, "escé\"q", ""},
		{[]string{"c"}, "", ""},
		{[]string{"absent"}, "", ""},
		{[]string{"e", "f"}, "g", ""},
		{[]string{"h"}, "set", ""},
		{[]string{"i"}, "new\n", ""},
		{[]string{"d"}, "", "invalid type: integer `5`, expected a string"},
		{[]string{"e"}, "", "invalid type: map, expected a string"},
		{[]string{"a", "x"}, "", "a: expected an object, found a string"},
	} {
		got, err := o.StringAt(c.path...)
		if got != c.want || errString(err) != c.err {
			t.Errorf("%v: %q, %v; want %q, %q", c.path, got, err, c.want, c.err)
		}
	}
}

func TestStringMapAtReadsAsDecodeStringMapDoes(t *testing.T) {
	o := parse(t, `{"l":{"app":"web","t\u00efer":"fr\u00f8nt","app":"last"},"e":{},"n":null,"bad":{"a":"b","c":5},"s":"x"}`)
	o.Set("set", map[string]string{"k": "v"})
	for _, c := range []struct {
		path []string
		want map[string]string
		err  string
	}{
		{[]string{"l"}, map[string]string{"app": "last", "tïer": "frønt"}, ""},
		{[]string{"e"}, map[string]string{}, ""},
		{[]string{"n"}, nil, ""},
		{[]string{"absent", "x"}, nil, ""},
		{[]string{"set"}, map[string]string{"k": "v"}, ""},
		{[]string{"bad"}, nil, "invalid type: integer `5`, expected a string"},
		{[]string{"s"}, nil, "invalid type: string \"x\", expected a map"},
		{[]string{"s", "x"}, nil, "s: expected an object, found a string"},
	} {
		got, err := o.StringMapAt(c.path...)
		if !maps.Equal(got, c.want) || (got == nil) != (c.want == nil) || errString(err) != c.err {
			t.Errorf("%v: %v, %v; want %v, %q", c.path, got, err, c.want, c.err)
		}
		raw, _ := o.Raw(c.path...)
		if raw == nil {
			continue
		}
		if decoded, err := sdk.DecodeStringMap(raw); !maps.Equal(got, decoded) || errString(err) != c.err {
			t.Errorf("%v: DecodeStringMap reads %v, %v", c.path, decoded, err)
		}
	}
}

func TestALazyObjectAnswersItsChangesAsAPatch(t *testing.T) {
	text := `{"apiVersion":"v1","spec":{"template":{"x":1},"replicas":null},"status":{"a":1},"a/b~c":1}`
	o := parse(t, text)
	if patch, err := o.JSONPatch(); patch != nil || err != nil {
		t.Errorf("unchanged: %s %v", patch, err)
	}
	if out, _ := o.MarshalJSON(); string(out) != text {
		t.Errorf("untouched text changed: %s", out)
	}
	o.Remove("status")
	spec := o.Object("spec")
	if !spec.SetIfAbsent("replicas", 1) || spec.SetIfAbsent("template", 2) {
		t.Error("SetIfAbsent")
	}
	spec.Object("strategy").Set("type", "RollingUpdate")
	o.Set("a/b~c", map[string]any{"k": "v"})
	o.Object("a/b~c").Set("l", true)
	patch, err := o.JSONPatch()
	want := `[{"op":"remove","path":"/status"},{"op":"add","path":"/spec/replicas","value":1},` +
		`{"op":"add","path":"/spec/strategy","value":{"type":"RollingUpdate"}},{"op":"add","path":"/a~1b~0c","value":{"k":"v","l":true}}]`
	if err != nil || string(patch) != want {
		t.Errorf("patch\n got %s\nwant %s", patch, want)
	}
	out, _ := o.MarshalJSON()
	if string(out) != `{"apiVersion":"v1","spec":{"template":{"x":1},"replicas":1,"strategy":{"type":"RollingUpdate"}},"a/b~c":{"k":"v","l":true}}` {
		t.Errorf("encoded %s", out)
	}
	if o.Object("apiVersion") != nil {
		t.Error("a string opened as an object")
	}
}

func TestCopyMemberKeepsTheOldTextAndRemovesWhatIsAbsent(t *testing.T) {
	old := parse(t, `{"status":{"ready": 3}}`)
	o := parse(t, `{"status":{"ready":1},"spec":{}}`)
	o.CopyMember(old, "status")
	o.CopyMember(old, "spec")
	out, _ := o.MarshalJSON()
	patch, _ := o.JSONPatch()
	if string(out) != `{"status":{"ready": 3}}` || string(patch) != `[{"op":"remove","path":"/spec"},{"op":"add","path":"/status","value":{"ready": 3}}]` {
		t.Errorf("%s\n%s", out, patch)
	}
}

func TestALazyObjectRefusesWhatIsNotOneJSONObject(t *testing.T) {
	for text, want := range map[string]string{
		`[1]`:          "invalid type: sequence, expected a JSON object",
		`{"a":}`:       `invalid character '}' looking for beginning of value at offset 5`,
		`{"a":1} x`:    `invalid character 'x' after top-level value at offset 8`,
		`{"a":"\u0001`: "unexpected end of JSON input",
		`{"a":01}`:     `invalid character '1' after object key:value pair at offset 6`,
		``:             "unexpected end of JSON input",
		strings.Repeat(`{"a":`, 129) + "1" + strings.Repeat("}", 129): "exceeded max depth of 128 at offset 640",
	} {
		if _, err := sdk.ParseLazyObject([]byte(text)); err == nil || err.Error() != want {
			t.Errorf("%.40s: %v, want %s", text, err, want)
		}
	}
	// What parses is what encoding/json accepts.
	for _, text := range []string{`{"a":[1,-2.5e+3,true,false,null,"x\"y\\u00e9"],"b":{},"c":[]}`, ` { "\u00e9" : 0 } `} {
		o, err := sdk.ParseLazyObject([]byte(text))
		if err != nil || !json.Valid([]byte(text)) {
			t.Errorf("%s: %v", text, err)
			continue
		}
		if text[1] == ' ' && o.Names()[0] != "é" {
			t.Errorf("escaped name %q", o.Names()[0])
		}
	}
}

// lazyDefaults is a strategy on LazyObject: it answers its defaults as a patch, and the
// harness shows the object the host would store.
type lazyDefaults struct{}

func (lazyDefaults) PrepareForCreate(_ *sdk.Context, obj *sdk.LazyObject) {
	obj.Remove("status")
	if spec := obj.Object("spec"); spec != nil {
		spec.SetIfAbsent("replicas", 1)
	}
}

func TestAStrategyOnALazyObjectAnswersAPatch(t *testing.T) {
	h := sdktest.For(sdk.NewHandler(sdk.Strategy[sdk.LazyObject]{
		Name: "lazy", Resources: []sdk.Resource{{Version: "v1", Kind: "Widget", Plural: "widgets", Scope: sdk.Namespaced}},
		Impl: lazyDefaults{},
	}))
	obj, errs, _, err := h.Create(`{"metadata":{"name":"w"},"spec":{"image":"x"},"status":{"a":1}}`)
	got, _ := json.Marshal(obj)
	if err != nil || errs != nil || string(got) != `{"metadata":{"name":"w"},"spec":{"image":"x","replicas":1}}` {
		t.Errorf("%s %v %v", got, errs, err)
	}
	resp, err := h.Call(&abi.Request{Arm: abi.ArmPrepareForCreate, Object: []byte(`{"spec":{}}`)})
	if err != nil || len(resp.Object) != 0 || string(resp.ObjectPatch) != `[{"op":"add","path":"/spec/replicas","value":1}]` {
		t.Errorf("answer %+v %v", resp, err)
	}
	if _, _, _, err := h.Create(`{"spec":`); err == nil || !strings.HasPrefix(err.Error(), "the object did not decode: unexpected end of JSON input") {
		t.Errorf("bad JSON: %v", err)
	}
}

// Reads scan a member's text again without checking it: escaped quotes and backslashes still
// end strings where they end.
func TestReadsFindMembersPastEscapes(t *testing.T) {
	o := parse(t, `{"a":{"k\"x":"v\\","b":"q\"}\\\"","c":[1.5e-3,{"d":"}"}],"é\u0301":-2}}`)
	for path, want := range map[string]string{
		"b": `"q\"}\\\""`, "k\"x": `"v\\"`, "c": `[1.5e-3,{"d":"}"}]`, "é\u0301": `-2`,
	} {
		raw, err := o.Raw("a", path)
		if err != nil || string(raw) != want {
			t.Errorf("a.%s = %s (%v), want %s", path, raw, err, want)
		}
	}
	o.Object("a").Set("z", "\u2028<>")
	out, _ := o.MarshalJSON()
	if !json.Valid(out) || !strings.HasSuffix(string(out), `"z":"`+"\u2028"+`<>"}}`) {
		t.Errorf("%s", out)
	}
}
