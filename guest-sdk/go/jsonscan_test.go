package sdk

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlainRunStopsAtTheFirstByteAStringEscapes: the scanner skips a string's bytes eight at a
// time, and must never skip one it has to look at, wherever it falls in a group and whatever
// bytes (UTF-8's above 0x7f among them) surround it.
func TestPlainRunStopsAtTheFirstByteAStringEscapes(t *testing.T) {
	fillers := []string{"abcdefghijklmnopqrstuvwxyz012345", "ééééééééééééééé", "\x7f!#[]^_`{}~\xff\x80 !#$", "  ¡¡¡¡¡¡¡¡¡¡¡¡¡¡"}
	for _, filler := range fillers {
		filler = strings.Repeat(filler, 2)
		for _, special := range []byte{0x00, 0x01, 0x1f, '"', '\\'} {
			for at := 0; at < 24; at++ {
				data := []byte(filler[:at] + string(special) + filler)
				if got := plainRun(data, 0); got > at {
					t.Errorf("%q with %#x at %d: skipped to %d", filler, special, at, got)
				}
			}
		}
		if got, want := plainRun([]byte(filler), 0), len(filler)/8*8; got != want {
			t.Errorf("%q: skipped to %d, want %d", filler, got, want)
		}
	}
}

// TestTheScannerAgreesWithEncodingJSON: the scanner that finds members (with no call per nested
// value) accepts what encoding/json accepts and refuses the rest.
func TestTheScannerAgreesWithEncodingJSON(t *testing.T) {
	deep := func(n int) string { return strings.Repeat(`{"a":[`, n) + "1" + strings.Repeat("]}", n) }
	for _, in := range []string{
		`{}`, `{"a":{}}`, `{"a":[]}`, `{"a":[{},[],"",1,-2.5e3,true,false,null]}`,
		`{"a":{"b":{"c":[1,[2,[3]]]}},"d":"e"}`, " {\n\"a\" :\t[ 1 , 2 ] , \"b\" : { } } ",
		`{"a":"\u00e9\n\"\\"}`, `{"a":"` + strings.Repeat("x", 37) + `\"` + strings.Repeat("y", 9) + `"}`,
		deep(63), `{"a":[1,]}`, `{"a":[,1]}`, `{"a":{"b":1,}}`, `{"a":{,}}`, `{"a":[1}`,
		`{"a":{"b":1]}`, `{"a":[1 2]}`, `{"a":{"b" 1}}`, `{"a":{1:2}}`, `{"a":tru}`, `{"a":01}`,
		`{"a":"` + "\x01" + `"}`, `{"a":"` + strings.Repeat("z", 20) + "\t" + `"}`, `{"a":"\x"}`,
		`{"a":[`, `{"a":{"b":`, `{"a":"`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`,
	} {
		_, err := ParseLazyObject([]byte(in))
		if valid := json.Valid([]byte(in)); (err == nil) != valid {
			t.Errorf("%.40q: scanner error %v, encoding/json valid %v", in, err, valid)
		}
	}
}
