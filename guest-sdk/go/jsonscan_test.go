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

// TestClosingQuoteFindsWhereTheCheckingScannerEnds: in checked text, the string's end is found
// eight bytes at a time; it must be where the checking scanner ends it, with the same verdict
// on escapes, wherever quotes and backslashes fall.
func TestClosingQuoteFindsWhereTheCheckingScannerEnds(t *testing.T) {
	pieces := []string{"a", "é", `\"`, `\\`, `\n`, `\u00e9`, "abcdefgh", `\\\"`}
	var texts []string
	var grow func(prefix string, depth int)
	grow = func(prefix string, depth int) {
		texts = append(texts, `"`+prefix+`"`)
		if depth == 0 {
			return
		}
		for _, p := range pieces {
			grow(prefix+p, depth-1)
		}
	}
	grow("", 3)
	for _, text := range texts {
		for _, tail := range []string{"", `,"x":1}`, strings.Repeat(" ", 9)} {
			data := []byte(text + tail)
			checked := scanner{data: data}
			wantEnd, wantEscaped, err := checked.string(0)
			if err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			if end, escaped := closingQuote(data, 0); end != wantEnd-1 || escaped != wantEscaped {
				t.Errorf("%s%s: closing quote at %d (escapes %v), want %d (%v)", text, tail, end, escaped, wantEnd-1, wantEscaped)
			}
		}
	}
	if end, _ := closingQuote([]byte(`"abcdefghij\"`), 0); end != 13 {
		t.Errorf("an unterminated string ends at %d, want the text's length", end)
	}
}

// TestCheckedTextIsSkippedToWhereTheCheckingScannerEnds: in text already checked, an object or
// array is skipped by its brackets and its strings' quotes alone; it must end where the checking
// scanner ends it, whatever its strings hold.
func TestCheckedTextIsSkippedToWhereTheCheckingScannerEnds(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `{"a":[{},[],"",1,-2.5e3,true,false,null]}`, `[[["]"]],"[",{"}":"{"}]`,
		`{"a":"\"}\\","b":["\\\"]\\\\"],"c":"` + strings.Repeat(`x\"`, 9) + `"}`,
		`{"k":"` + strings.Repeat("y", 17) + `\\` + `","l":{"m":"` + strings.Repeat(`\\`, 5) + `"}}`,
		` [ 1 , { "a" : [ "b" , "c\"]" ] } ] `, `{"é":"ü\u00e9","n":[{"o":{"p":[[[]]]}}]}`,
	} {
		data := []byte(in)
		start := (&scanner{data: data}).space(0)
		want, err := (&scanner{data: data}).value(start)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got, err := (&scanner{data: data, trusted: true}).value(start); got != want || err != nil {
			t.Errorf("%s: skipped to %d (%v), want %d", in, got, err, want)
		}
	}
}
