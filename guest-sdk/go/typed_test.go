package sdk_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"strategyhost.dev/sdk"
)

func TestDecodeAndJoinObject(t *testing.T) {
	var seen []string
	rest, err := sdk.DecodeObject([]byte(`{"b":1,"a":{"x":[1]},"z":2,"z":3,"c":null}`), "struct T", []string{"a", "c"},
		func(name string, raw []byte) error {
			seen = append(seen, name+"="+string(raw))
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`a={"x":[1]}`, "c=null"}; !reflect.DeepEqual(seen, want) || rest["z"] != json.Number("3") || rest["b"] != json.Number("1") || len(rest) != 2 {
		t.Errorf("got %v %v", seen, rest)
	}
	out, err := sdk.JoinObject([]sdk.Member{{Name: "z", Value: "first"}, {Name: "a", Value: nil}}, rest)
	if want := `{"z":"first","a":null,"b":1}`; err != nil || string(out) != want {
		t.Errorf("got %s, want %s (%v)", out, want, err)
	}
	if out, err := sdk.JoinObject(nil, nil); string(out) != `{}` || err != nil {
		t.Errorf("got %s %v", out, err)
	}

	// As serde does: members in order, so the first problem is the one reported, and a
	// duplicate only once it is reached.
	failOnC := func(name string, raw []byte) error {
		if name == "c" {
			return errors.New("bad c")
		}
		return nil
	}
	for in, want := range map[string]string{
		`{"a":1,"a":2}`:       "duplicate field `a`",
		`{"c":1,"a":1,"a":2}`: "bad c",
		`{"a":1,"a":2,"c":1}`: "duplicate field `a`",
		` "x"`:                `invalid type: string "x", expected struct T`,
		`null`:                "invalid type: null, expected struct T",
		`{"a":1,"b":2,"b":3}`: "",
	} {
		if _, err := sdk.DecodeObject([]byte(in), "struct T", []string{"a", "c"}, failOnC); errString(err) != want {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}

func TestTypeErrorDescribesLikeSerde(t *testing.T) {
	for raw, want := range map[string]string{
		`null`:                 "null",
		`false`:                "boolean `false`",
		`"a\"b"`:               `string "a\"b"`,
		`[1]`:                  "sequence",
		`{}`:                   "map",
		`5`:                    "integer `5`",
		`-5`:                   "integer `-5`",
		`18446744073709551615`: "integer `18446744073709551615`",
		`18446744073709551616`: "floating point `1.8446744073709552e+19`",
		`-0`:                   "floating point `-0.0`",
		`1.5`:                  "floating point `1.5`",
		`1e2`:                  "floating point `100.0`",
		`-9223372036854775808`: "integer `-9223372036854775808`",
		`-9223372036854775809`: "floating point `-9.223372036854776e+18`",
	} {
		if got := sdk.TypeError([]byte(raw), "x").Error(); got != "invalid type: "+want+", expected x" {
			t.Errorf("%s: %s", raw, got)
		}
	}
}
