package sdk_test

import (
	"reflect"
	"strings"
	"testing"

	"strategyhost.dev/sdk"
)

func TestObjectMetaKeepsTheRestAndDropsEmpties(t *testing.T) {
	var m sdk.ObjectMeta
	in := `{"uid":"u1","name":"web","labels":{},"namespace":"","annotations":{"a":"1"},"generation":3}`
	if err := sdk.DecodeJSON([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if m.Name != "web" || m.Annotations["a"] != "1" || m.Rest["uid"] != "u1" || m.Rest["generation"] != jsonNumber("3") {
		t.Errorf("got %+v", m)
	}
	out, err := sdk.EncodeJSON(m)
	if want := `{"name":"web","annotations":{"a":"1"},"generation":3,"uid":"u1"}`; err != nil || string(out) != want {
		t.Errorf("got %s, want %s (%v)", out, want, err)
	}
	if out, _ := sdk.EncodeJSON(sdk.ObjectMeta{}); string(out) != `{}` {
		t.Errorf("empty: %s", out)
	}
}

func TestObjectMetaRefusesWhatSerdeRefuses(t *testing.T) {
	for in, want := range map[string]string{
		`null`:                         "invalid type: null, expected struct ObjectMeta",
		`[]`:                           "invalid type: sequence, expected struct ObjectMeta",
		`{"name":null}`:                "invalid type: null, expected a string",
		`{"name":1}`:                   "invalid type: integer `1`, expected a string",
		`{"namespace":true}`:           "invalid type: boolean `true`, expected a string",
		`{"labels":null}`:              "invalid type: null, expected a map",
		`{"labels":{"a":1.5}}`:         "invalid type: floating point `1.5`, expected a string",
		`{"annotations":{"a":null}}`:   "invalid type: null, expected a string",
		`{"name":"a","name":"b"}`:      "duplicate field `name`",
		`{"labels":["a"]}`:             "invalid type: sequence, expected a map",
		`{"name":{"x":1}}`:             "invalid type: map, expected a string",
		`{"uid":"a","uid":"b","x":{}}`: "",
	} {
		var m sdk.ObjectMeta
		if got := errString(sdk.DecodeJSON([]byte(in), &m)); got != want {
			t.Errorf("%s: error %q, want %q", in, got, want)
		}
	}
}

func TestMapAccessors(t *testing.T) {
	obj := map[string]any{"metadata": map[string]any{"name": "web", "namespace": 1,
		"labels": map[string]any{"app": "web", "n": 1}}}
	if n, ok := sdk.Name(obj); n != "web" || !ok {
		t.Error("Name")
	}
	if _, ok := sdk.Namespace(obj); ok {
		t.Error("Namespace of a number")
	}
	if l := sdk.Labels(obj); !reflect.DeepEqual(l, map[string]string{"app": "web"}) {
		t.Errorf("Labels %v", l)
	}
	empty := map[string]any{}
	sdk.SetLabel(empty, "app", "web")
	sdk.SetAnnotation(empty, "example.com/owner", "alice")
	if a, ok := sdk.Annotation(empty, "example.com/owner"); a != "alice" || !ok {
		t.Errorf("annotation %v", empty)
	}
	sdk.RemoveAnnotation(empty, "example.com/owner")
	if want := map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}}; !reflect.DeepEqual(empty, want) {
		t.Errorf("got %v", empty)
	}
	if _, ok := sdk.Name(map[string]any{}); ok {
		t.Error("Name of nothing")
	}
}

func TestNameValidators(t *testing.T) {
	const label = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
	for in, want := range map[string][]string{
		"web-1":                 nil,
		"a":                     nil,
		"":                      {label},
		"Web_1":                 {label},
		"-a":                    {label},
		"a-":                    {label},
		strings.Repeat("a", 63): nil,
		strings.Repeat("a", 64): {"must be no more than 63 characters"},
		strings.Repeat("A", 64): {"must be no more than 63 characters", label},
		"é":                     {label},
	} {
		if got := sdk.DNS1123LabelErrors(in); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
	const key = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
	for in, want := range map[string][]string{
		"app.properties":         nil,
		"a/b":                    {key},
		"":                       {key},
		"..":                     {"must not be '..'"},
		strings.Repeat("a", 254): {"must be no more than 253 characters"},
	} {
		if got := sdk.ConfigMapKeyErrors(in); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}
