package sdk_test

import (
	"encoding/json"
	"strings"
	"testing"

	"strategyhost.dev/sdk"
)

func TestDecodeJSON(t *testing.T) {
	var v any
	if err := sdk.DecodeJSON([]byte(` {"n": 9007199254740993} `), &v); err != nil {
		t.Fatal(err)
	}
	if n := v.(map[string]any)["n"]; n != json.Number("9007199254740993") {
		t.Errorf("got %#v", n)
	}
	deep := func(n int) []byte {
		return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	for _, c := range []struct {
		in, want string
	}{
		{``, "EOF while parsing a value"},
		{`{} x`, "trailing characters"},
		{`1 2`, "trailing characters"},
		{string(deep(127)), ""},
		{string(deep(128)), "recursion limit exceeded"},
		{`{"a":"[[[[` + strings.Repeat("[", 200) + `"}`, ""},
		{`"\"[` + strings.Repeat("[", 200) + `"`, ""},
	} {
		err := sdk.DecodeJSON([]byte(c.in), &v)
		if got := errString(err); got != c.want {
			t.Errorf("%.20q: error %q, want %q", c.in, got, c.want)
		}
	}
}

func TestEncodeJSONDoesNotEscapeHTML(t *testing.T) {
	out, err := sdk.EncodeJSON(map[string]any{"s": "<&>", "n": json.Number("1.50")})
	if err != nil || string(out) != `{"n":1.50,"s":"<&>"}` {
		t.Errorf("got %s %v", out, err)
	}
}

func TestEncodeJSONWritesLineSeparatorsAsSerdeJSONDoes(t *testing.T) {
	out, err := sdk.EncodeJSON([]string{"a\u2028b\u2029", `\u2028`, "\\\u2028"})
	if want := "[\"a\u2028b\u2029\",\"\\\\u2028\",\"\\\\\u2028\"]"; err != nil || string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
