package abi

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

func TestEncodingIsProto3s(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		// Defaults are left out.
		{"empty response", (&Response{}).Marshal(), ""},
		// warnings = 3 ("a"), allowed = 4 (true).
		{"response", (&Response{Warnings: []string{"a"}, Allowed: true}).Marshal(), "1a0161" + "2001"},
		// An empty element of a repeated field is still written.
		{"empty converted object", (&Response{ConvertedObjects: [][]byte{{}}}).Marshal(), "3200"},
		// A negative enum takes ten bytes.
		{"negative enum", (&FieldError{Kind: -1}).Marshal(), "08ffffffffffffffffff01"},
		// Enums are packed: operations = 4, [1, 2].
		{"packed", (&Manifest{Operations: []Operation{1, 2}}).Marshal(), "22020102"},
		// An empty oneof arm is written, so the operation is known.
		{"empty arm", (&Request{Arm: ArmAllowCreateOnUpdate}).Marshal(), "8a0100"},
		// validate = 11: {object = 1: "{}"}.
		{"validate", (&Request{Arm: ArmValidate, Object: []byte("{}")}).Marshal(), "5a040a027b7d"},
		// A map entry: extra = 4 {key = 1: "k", value = 2: {values = 1: "v"}}.
		{"map", (&UserInfo{Extra: map[string][]string{"k": {"v"}}}).Marshal(), "2208" + "0a016b" + "1203" + "0a0176"},
	} {
		if got := hex.EncodeToString(c.got); got != c.want {
			t.Errorf("%s: encoded %s, want %s", c.name, got, c.want)
		}
	}
}

func (u *UserInfo) Marshal() []byte   { return marshal(u) }
func (f *FieldError) Marshal() []byte { return marshal(f) }

func TestMessagesRoundTrip(t *testing.T) {
	manifest := Manifest{
		ABIVersion: 1, ABIMinorVersion: 3, Name: "widgets",
		Resources:     []Resource{{"example.com", "v1", "Widget", "widgets", ScopeNamespaced}},
		Operations:    []Operation{OperationValidate, OperationConvert},
		HostFunctions: []HostFunction{HostFunctionLog, HostFunctionApply},
		Applies:       []GroupKind{{"", "Namespace"}},
	}
	var m Manifest
	roundTrip(t, &manifest, &m)
	policy := Manifest{
		ABIVersion: 1, ABIMinorVersion: 5, Name: "owner-label",
		Operations: []Operation{OperationAdmitValidate},
		AdmissionPolicy: &AdmissionPolicy{
			MatchResources:    []byte(`{"resourceRules":[]}`),
			MatchConditions:   []MatchCondition{{"not-dry", "!request.dryRun"}, {Name: "n"}},
			ValidationActions: []string{"Deny", "Warn"}, FailurePolicy: "Ignore",
		},
	}
	roundTrip(t, &policy, &m)
	authorizer := Manifest{ABIVersion: 1, ABIMinorVersion: 5, Name: "a",
		Operations: []Operation{OperationAuthorize}, Authorizer: &Authorizer{}}
	roundTrip(t, &authorizer, &m)

	ctx := &Context{
		Resource: &Resource{Group: "g", Kind: "K", Scope: ScopeCluster}, DryRun: true, RequestID: "r1",
		User: &UserInfo{Username: "alice", UID: "u1", Groups: []string{"a", "b"},
			Extra: map[string][]string{"x": {"1", "2"}, "y": nil}},
	}
	for _, req := range []Request{
		{Context: ctx, Arm: ArmBeforeUpdate, Object: []byte(`{"a":1}`), OldObject: []byte(`{}`)},
		{Arm: ArmValidate, Object: []byte(`{}`)},
		{Arm: ArmAllowUnconditionalUpdate},
		{Arm: ArmAdmit, Admit: &AdmitRequest{Phase: AdmissionPhaseMutate, Operation: "CREATE",
			Object: []byte(`{}`), Namespace: "ns", Name: "n", Subresource: "status"}},
		{Arm: ArmConvert, Convert: &ConvertRequest{Objects: [][]byte{[]byte(`{}`), []byte(`[]`)},
			DesiredAPIVersion: "g/v2"}},
		{Arm: ArmAuthorize, Authorize: &AuthorizeRequest{Spec: []byte(`{"user":"jane"}`)}},
	} {
		var r Request
		roundTrip(t, &req, &r)
	}

	var r Response
	roundTrip(t, &Response{Object: []byte(`{}`), Warnings: []string{"w", ""}, Allowed: true, Error: "e",
		FieldErrors:      []FieldError{{FieldErrorKindTooMany, "spec.x[0]", "at most 1"}},
		ConvertedObjects: [][]byte{[]byte(`{}`)}, ObjectPatch: []byte(`[{"op":"remove","path":"/a"}]`),
		Denied: true, Reason: "blocked"}, &r)

	var gq GetRequest
	roundTrip(t, &GetRequest{"g", "ps", "ns", "n"}, &gq)
	var gr GetResponse
	roundTrip(t, &GetResponse{Found: true, Object: []byte(`{}`), Error: "e"}, &gr)
	var lq ListRequest
	roundTrip(t, &ListRequest{"g", "ps", "ns", "a=b"}, &lq)
	var lr ListResponse
	roundTrip(t, &ListResponse{Items: [][]byte{[]byte(`{}`)}, Error: "e"}, &lr)
	var aq ApplyRequest
	roundTrip(t, &ApplyRequest{Object: []byte(`{}`)}, &aq)
	var ar ApplyResponse
	roundTrip(t, &ApplyResponse{Object: []byte(`{}`), Error: "e"}, &ar)
}

type message interface {
	Marshal() []byte
	Unmarshal([]byte) error
}

func roundTrip(t *testing.T, in, out message) {
	t.Helper()
	if err := out.Unmarshal(in.Marshal()); err != nil {
		t.Fatalf("%T: %v", in, err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("%T: round trip gave %+v, want %+v", in, out, in)
	}
}

func TestDecodingSkipsUnknownFieldsAndReadsUnpackedEnums(t *testing.T) {
	var e encoder
	e.uint(99, 7)                     // an unknown varint
	e.string(98, "future")            // an unknown string
	e.buf = append(e.buf, 0x9d, 0x06) // field 99, fixed32
	e.buf = append(e.buf, 1, 2, 3, 4) //
	e.buf = append(e.buf, 0x99, 0x06) // field 99, fixed64
	e.buf = append(e.buf, make([]byte, 8)...)
	e.uint(manifestOperations, 2)  // unpacked
	e.uint(manifestOperations, 16) // unpacked
	packed(&e, manifestOperations, []Operation{5})
	e.uint(manifestABIMinorVersion, 3)
	var m Manifest
	if err := m.Unmarshal(e.buf); err != nil {
		t.Fatal(err)
	}
	if want := []Operation{2, 16, 5}; !reflect.DeepEqual(m.Operations, want) || m.ABIMinorVersion != 3 {
		t.Errorf("got %+v", m)
	}
}

func TestTheLastOneofArmWins(t *testing.T) {
	b := append((&Request{Arm: ArmValidate, Object: []byte("1")}).Marshal(),
		(&Request{Arm: ArmBeforeUpdate, Object: []byte("2"), OldObject: []byte("3")}).Marshal()...)
	var r Request
	if err := r.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if r.Arm != ArmBeforeUpdate || string(r.Object) != "2" || string(r.OldObject) != "3" {
		t.Errorf("got %+v", r)
	}
	// An arm whose message has no old_object ignores a field 2.
	var sub encoder
	sub.bytes(1, []byte("o"))
	sub.bytes(2, []byte("x"))
	var e encoder
	e.element(int(ArmValidate), sub.buf)
	if err := r.Unmarshal(e.buf); err != nil || string(r.Object) != "o" || r.OldObject != nil {
		t.Errorf("got %+v, %v", r, err)
	}
}

func TestMalformedInputIsAnError(t *testing.T) {
	for _, c := range []struct {
		name, hex, want string
	}{
		{"truncated varint", "08ff", "unexpected end"},
		{"truncated length", "2a05616263", "unexpected end"},
		{"field zero", "0001", "invalid field number 0"},
		{"group", "0b", "unsupported wire type 3"},
		{"wrong wire type", "2801", "wire type 0 where a length-delimited"},
		{"bad utf-8", "2a01ff", "UTF-8"},
		{"overlong varint", "08ffffffffffffffffff7f", "overflows"},
	} {
		b, _ := hex.DecodeString(c.hex)
		var r Response
		err := r.Unmarshal(b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.name, err, c.want)
		}
	}
}

func TestDecodedBytesAliasTheInput(t *testing.T) {
	b := (&ApplyRequest{Object: []byte("{}")}).Marshal()
	var r ApplyRequest
	if err := r.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Object, []byte("{}")) || &r.Object[0] != &b[2] {
		t.Error("the object should alias the input")
	}
}
