package sdk

import (
	"fmt"
	"testing"
)

func TestFormatFloatIsSerdeJSONs(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 1: "1.0", -1.5: "-1.5", 100: "100.0", 0.1: "0.1", 1e15: "1000000000000000.0",
		1.5e15: "1500000000000000.0", 1e16: "1e+16", 1.25e16: "1.25e+16", 1e-5: "0.00001",
		1.5e-5: "0.000015", 1e-6: "1e-6", 1.5e-7: "1.5e-7", 1e300: "1e+300", 5e-324: "5e-324",
		123456.789: "123456.789", 9007199254740993: "9007199254740992.0",
		1.7976931348623157e308: "1.7976931348623157e+308",
	} {
		if got := formatFloat(f); got != want {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
}

// TestDecodeObjectRefusesADuplicateOfAnyName: the names already seen are kept in a bit each for
// the first 64 and a slice past them; a duplicate is refused on either side of that line.
func TestDecodeObjectRefusesADuplicateOfAnyName(t *testing.T) {
	var names []string
	for i := 0; i < 70; i++ {
		names = append(names, fmt.Sprintf("f%d", i))
	}
	decode := func(string, []byte) error { return nil }
	for _, dup := range []int{0, 3, 63, 64, 66, 69} {
		text := fmt.Sprintf(`{"f1":1,"f%d":1,"f65":1,"f%d":2}`, dup, dup)
		_, err := DecodeObject([]byte(text), "struct S", names, decode)
		if want := fmt.Sprintf("duplicate field `f%d`", dup); err == nil || err.Error() != want {
			t.Errorf("f%d twice: %v, want %s", dup, err, want)
		}
	}
	if _, err := DecodeObject([]byte(`{"f0":1,"f63":1,"f64":1,"f69":1,"other":1}`), "struct S", names, decode); err != nil {
		t.Errorf("distinct names: %v", err)
	}
}
