package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Helpers for typed objects. encoding/json drops the members a struct does not name (and
// matches names without regard to case), and Kubernetes objects carry many members a strategy
// does not know, which must be stored unchanged: a typed struct keeps them in a
// `Rest map[string]any` field with an UnmarshalJSON built on DecodeObject and a MarshalJSON
// built on JoinObject (ObjectMeta is one). The Rust SDK's serde structs do the same with
// #[serde(flatten)]; these helpers follow serde's rules and words, so a Go port of a typed Rust
// strategy accepts and refuses the same objects with the same errors.
//
// Their errors remember where in the input they arose, and the SDK reports that place as
// serde_json does (" at line 1 column 42") when the object the host sent was decoded by calling
// the type's UnmarshalJSON with slices of that input: pass the slices these helpers hand out on
// to nested UnmarshalJSON methods and helpers, not copies.

// DecodeError is a decode error that knows the part of the input it concerns: At, a slice of
// the input, and Pos, the offset in At where serde_json reports it.
type DecodeError struct {
	Msg string
	At  []byte
	Pos int
}

func (e *DecodeError) Error() string { return e.Msg }

// ErrorAt is an error about the JSON value raw (a slice of the input), reported where
// serde_json reports a value's error: after a scalar, at the bracket of an array or object.
func ErrorAt(raw []byte, msg string) error {
	raw = bytes.TrimSpace(raw)
	pos := len(raw)
	if len(raw) > 0 && (raw[0] == '[' || raw[0] == '{') {
		pos = 0
	}
	return &DecodeError{Msg: msg, At: raw, Pos: pos}
}

// TypeError is serde's error for a JSON value of the wrong type, e.g. "invalid type: null,
// expected a string".
func TypeError(raw []byte, expecting string) error {
	return ErrorAt(raw, fmt.Sprintf("invalid type: %s, expected %s", describe(bytes.TrimSpace(raw)), expecting))
}

// locate says where err arose in data as serde_json does ("line 1 column 42"), when it is a
// DecodeError about a slice of data.
func locate(data []byte, err error) (line, column int, ok bool) {
	var de *DecodeError
	if !errors.As(err, &de) || len(de.At) == 0 {
		return 0, 0, false
	}
	start := cap(data) - cap(de.At)
	if start < 0 || start >= len(data) || &data[start] != &de.At[0] {
		return 0, 0, false
	}
	pos := start + de.Pos
	lineStart := bytes.LastIndexByte(data[:pos], '\n') + 1
	return 1 + bytes.Count(data[:lineStart], []byte{'\n'}), pos - lineStart, true
}

// eachMember calls fn with every member of the JSON object in data, in order: the key token (a
// slice of data, quotes included), the key, and the value (a slice of data).
func eachMember(data []byte, expecting string, fn func(keyToken []byte, key memberKey, raw []byte) error) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return TypeError(data, expecting)
	}
	var failed error
	sc := scanner{data: data}
	_, err := sc.object(0, func(key []byte, escaped bool, keyStart, start, end int) {
		if failed == nil {
			failed = fn(data[keyStart:keyStart+len(key)+2], memberKey{key, escaped}, data[start:end])
		}
	})
	if failed != nil {
		return failed
	}
	return err
}

// memberKey is a member's key as scanned: its text between the quotes, escaped when it holds
// escape sequences. Comparing it with a name allocates nothing; its String is a copy.
type memberKey struct {
	text    []byte
	escaped bool
}

func (k memberKey) String() string { return keyName(k.text, k.escaped) }

func (k memberKey) is(name string) bool {
	if !k.escaped {
		return string(k.text) == name
	}
	return k.String() == name
}

// DecodeObject reads the JSON object in data for a typed struct's UnmarshalJSON as serde reads
// a struct: member by member, in order, it passes each member named in names to decode (a named
// member given twice is an error, "duplicate field `name`", when the second is reached), and
// returns every other member, decoded with DecodeJSON's rules, in rest (never nil). A struct
// that keeps what it does not name (serde's flatten) stores rest; one that drops it ignores it.
// expecting names the struct for the error when data is not an object, e.g. "struct
// ObjectMeta". Of members not named given twice, the last wins.
func DecodeObject(data []byte, expecting string, names []string, decode func(name string, raw []byte) error) (rest map[string]any, err error) {
	rest = map[string]any{}
	var seen indexSet
	err = eachMember(data, expecting, func(keyToken []byte, key memberKey, raw []byte) error {
		at := slices.IndexFunc(names, key.is)
		if at < 0 {
			var v any
			if err := DecodeJSON(raw, &v); err != nil {
				return err
			}
			rest[key.String()] = v
			return nil
		}
		if !seen.add(at) {
			return &DecodeError{Msg: fmt.Sprintf("duplicate field `%s`", names[at]), At: keyToken, Pos: len(keyToken)}
		}
		return decode(names[at], raw)
	})
	if err != nil {
		return nil, err
	}
	return rest, nil
}

// indexSet is a set of small non-negative integers: a bit each below 64 (no allocation, as a
// map would be in every decode), a slice above.
type indexSet struct {
	bits uint64
	more []bool
}

// add adds i, telling whether it was absent.
func (s *indexSet) add(i int) bool {
	if i < 64 {
		absent := s.bits&(1<<i) == 0
		s.bits |= 1 << i
		return absent
	}
	if len(s.more) <= i-64 {
		s.more = append(s.more, make([]bool, i-64+1-len(s.more))...)
	}
	absent := !s.more[i-64]
	s.more[i-64] = true
	return absent
}

// DecodeArray reads the JSON array in data as serde reads a struct given as an array of its
// members (which it accepts for a struct that does not keep unknown members): decode gets each
// element in order with its index, and an element past maxLen is an error ("trailing
// characters"). expecting names the struct for the error when data is not an array.
func DecodeArray(data []byte, expecting string, maxLen int, decode func(i int, raw []byte) error) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '[' {
		return TypeError(data, expecting)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return err
	}
	for i := 0; dec.More(); i++ {
		before := int(dec.InputOffset())
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
		raw := bytes.TrimLeft(data[before:dec.InputOffset()], " \t\r\n,")
		if i >= maxLen {
			return &DecodeError{Msg: "trailing characters", At: raw, Pos: 1}
		}
		if err := decode(i, raw); err != nil {
			return err
		}
	}
	return nil
}

// Member is one member of an object JoinObject writes.
type Member struct {
	Name  string
	Value any
}

// JoinObject encodes an object for a typed struct's MarshalJSON: the members given, in order,
// then those of rest in key order (as serde_json writes a flattened map), leaving out a member
// of rest that one given already has.
func JoinObject(members []Member, rest map[string]any) ([]byte, error) {
	keys := make([]string, 0, len(rest))
	for k := range rest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		shadowed := false
		for _, m := range members {
			shadowed = shadowed || m.Name == k
		}
		if !shadowed {
			members = append(members, Member{k, rest[k]})
		}
	}
	buf := []byte{'{'}
	for i, m := range members {
		if i > 0 {
			buf = append(buf, ',')
		}
		key, err := EncodeJSON(m.Name)
		if err != nil {
			return nil, err
		}
		value, err := EncodeJSON(m.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		buf = append(append(append(buf, key...), ':'), value...)
	}
	return append(buf, '}'), nil
}

// DecodeString decodes a JSON string, refusing anything else (null included) as serde does
// for a String field.
func DecodeString(raw []byte) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", TypeError(raw, "a string")
	}
	if len(raw) >= 2 && raw[len(raw)-1] == '"' && isPlain(raw[1:len(raw)-1]) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// isPlain tells whether b is a JSON string's contents that need no decoding: valid UTF-8 with no
// quote, backslash or control character.
func isPlain(b []byte) bool {
	for _, c := range b {
		if c == '"' || c == '\\' || c < 0x20 {
			return false
		}
	}
	return utf8.Valid(b)
}

// DecodeStringMap decodes a JSON object of strings, refusing anything else (null, or a member
// that is not a string) as serde does for a map of strings. Of keys given twice, the last wins.
func DecodeStringMap(raw []byte) (map[string]string, error) {
	m := map[string]string{}
	err := eachMember(raw, "a map", func(_ []byte, key memberKey, value []byte) error {
		s, err := DecodeString(value)
		m[key.String()] = s
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// describe names a JSON value as serde_json's Unexpected does.
func describe(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean `" + string(raw) + "`"
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return "string " + quoteRust(s)
	case '[':
		return "sequence"
	case '{':
		return "map"
	}
	text := string(raw)
	if !strings.ContainsAny(text, ".eE") {
		if _, err := strconv.ParseUint(text, 10, 64); err == nil {
			return "integer `" + text + "`"
		}
		if i, err := strconv.ParseInt(text, 10, 64); err == nil && i < 0 {
			return "integer `" + text + "`"
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return text
	}
	return "floating point `" + formatFloat(f) + "`"
}

// formatFloat writes a float as serde_json does (its zmij formatter): the shortest digits that
// read back as f, in fixed notation with at least one decimal (100.0, 0.00012) when the decimal
// exponent is from -5 to 15, else as 1.5e+20 or 1e-7.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	sci := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	sign := ""
	if sci[0] == '-' {
		sign, sci = "-", sci[1:]
	}
	mantissa, exponent, _ := strings.Cut(sci, "e")
	exp, _ := strconv.Atoi(exponent)
	digits := strings.Replace(mantissa, ".", "", 1)
	switch {
	case exp < -5 || exp > 15:
		out := digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		expSign := "+"
		if exp < 0 {
			expSign, exp = "-", -exp
		}
		return sign + out + "e" + expSign + strconv.Itoa(exp)
	case len(digits)-1 <= exp:
		return sign + digits + strings.Repeat("0", exp-(len(digits)-1)) + ".0"
	case exp >= 0:
		return sign + digits[:exp+1] + "." + digits[exp+1:]
	default:
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	}
}

// quoteRust quotes a string as Rust's {:?} does (\0 \t \r \n \\ \" escaped, and characters that
// are not printable or extend a grapheme as \u{hex}), for messages that must read exactly as a
// Rust strategy's.
func quoteRust(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case 0:
			b.WriteString(`\0`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\n':
			b.WriteString(`\n`)
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		default:
			if unicode.In(r, unicode.Mn, unicode.Me, unicode.Other_Grapheme_Extend) || !unicode.IsPrint(r) {
				fmt.Fprintf(&b, `\u{%x}`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
