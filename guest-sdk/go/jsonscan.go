package sdk

// A JSON scanner for LazyObject: finds where each member of an object starts and ends,
// checking the syntax as it goes, without building any value. encoding/json has no way to
// hand out a member's text unparsed short of decoding into json.RawMessage, which runs its
// scanner over the text twice and allocates per member.

import (
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"
)

// scanner walks one JSON text.
type scanner struct {
	data  []byte
	depth int
	// trusted is set for text this scanner already checked (a LazyObject's members, read
	// again): strings are skipped to their closing quote and numbers to their end unchecked.
	trusted bool
}

func (s *scanner) fail(at int, what string) error {
	if at >= len(s.data) {
		return errors.New("unexpected end of JSON input")
	}
	return fmt.Errorf("invalid character %q %s at offset %d", s.data[at], what, at)
}

func (s *scanner) space(i int) int {
	for i < len(s.data) {
		switch s.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value checks the value starting at i (after any space) and returns where it ends. It keeps
// the objects and arrays it is inside on a stack of its own rather than calling itself for each:
// a call costs far more in Go's WebAssembly than in native code, and an object's members are
// mostly small values.
func (s *scanner) value(i int) (int, error) {
	data := s.data
	// open are the containers entered, '{' or '[', innermost last.
	var open [maxDepth]byte
	n := 0
	var err error
next:
	for {
		// A value is expected at i.
		i = s.space(i)
		if i >= len(data) {
			return i, s.fail(i, "")
		}
		switch c := data[i]; {
		case (c == '{' || c == '[') && s.trusted:
			if i, err = s.skipChecked(i); err != nil {
				return i, err
			}
		case c == '{' || c == '[':
			if s.depth+n+1 > maxDepth {
				return i, depthError(i)
			}
			open[n] = c
			n++
			i = s.space(i + 1)
			if i < len(data) && data[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				i++
				n--
			} else if c == '[' {
				continue next
			} else if i, err = s.key(i); err != nil {
				return i, err
			} else {
				continue next
			}
		case c == '"':
			if i, _, err = s.string(i); err != nil {
				return i, err
			}
		case c == 't':
			if i, err = s.literal(i, "true"); err != nil {
				return i, err
			}
		case c == 'f':
			if i, err = s.literal(i, "false"); err != nil {
				return i, err
			}
		case c == 'n':
			if i, err = s.literal(i, "null"); err != nil {
				return i, err
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if i, err = s.number(i); err != nil {
				return i, err
			}
		default:
			return i, s.fail(i, "looking for beginning of value")
		}
		// A value ended at i: close what it ends, or go on to the next member or element.
		for n > 0 {
			i = s.space(i)
			if i >= len(data) {
				return i, s.fail(i, "")
			}
			switch c := data[i]; {
			case c == ',' && open[n-1] == '{':
				if i, err = s.key(s.space(i + 1)); err != nil {
					return i, err
				}
				continue next
			case c == ',':
				i++
				continue next
			case c == open[n-1]+2:
				i++
				n--
			case open[n-1] == '{':
				return i, s.fail(i, "after object key:value pair")
			default:
				return i, s.fail(i, "after array element")
			}
		}
		return i, nil
	}
}

// skipChecked returns where the object or array at i ends, in text already checked: it looks
// only at brackets and at strings' closing quotes.
func (s *scanner) skipChecked(i int) (int, error) {
	data := s.data
	depth := 0
	for i < len(data) {
		switch data[i] {
		case '"':
			// closingQuote's loop, written out: a call per string is most of a skip's cost
			// in Go's WebAssembly, and the strings skipped are mostly short.
			for i++; ; i += 2 {
				for i+8 <= len(data) && !quoteOrBackslash(word(data, i)) {
					i += 8
				}
				for i < len(data) && data[i] != '"' && data[i] != '\\' {
					i++
				}
				if i >= len(data) || data[i] == '"' {
					break
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1, nil
			}
		}
		i++
		for i < len(data) && !structural[data[i]] {
			i++
		}
	}
	return i, s.fail(i, "")
}

// closingQuote is where the string opened at i ends (its closing quote; len(data) when it does
// not) and whether it holds escapes, in text already checked. It skips eight bytes at a time
// while none is a quote or a backslash.
func closingQuote(data []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; ; {
		for j+8 <= len(data) && !quoteOrBackslash(word(data, j)) {
			j += 8
		}
		for j < len(data) && data[j] != '"' && data[j] != '\\' {
			j++
		}
		switch {
		case j >= len(data):
			return len(data), escaped
		case data[j] == '"':
			return j, escaped
		}
		// A backslash and the character it escapes.
		escaped = true
		j += 2
	}
}

// word is the eight bytes of data from i, in one load.
func word(data []byte, i int) uint64 {
	return *(*uint64)(unsafe.Pointer(&data[i]))
}

// quoteOrBackslash tells whether a byte of w is a quote or a backslash (a byte equal to one is
// zero after the xor, and a zero byte sets its high bit in the difference).
func quoteOrBackslash(w uint64) bool {
	quote, backslash := w^(ones*'"'), w^(ones*'\\')
	return ((quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0
}

// ones and highs are a word's bytes all 0x01 and all 0x80, for testing its eight bytes at once.
const ones, highs = 0x0101010101010101, 0x8080808080808080

// structural are the bytes skipChecked stops at.
var structural = func() (t [256]bool) {
	for _, c := range `"{}[]` {
		t[c] = true
	}
	return t
}()

// key checks an object's key and its colon at i, returning where the member's value may start.
func (s *scanner) key(i int) (int, error) {
	if i >= len(s.data) || s.data[i] != '"' {
		return i, s.fail(i, "looking for beginning of object key string")
	}
	end, _, err := s.string(i)
	if err != nil {
		return end, err
	}
	i = s.space(end)
	if i >= len(s.data) || s.data[i] != ':' {
		return i, s.fail(i, "after object key")
	}
	return i + 1, nil
}

func depthError(i int) error {
	return fmt.Errorf("exceeded max depth of %d at offset %d", maxDepth, i)
}

func (s *scanner) nest(i int) error {
	s.depth++
	if s.depth > maxDepth {
		return depthError(i)
	}
	return nil
}

// memberFunc is told of one member of an object: its key's text between the quotes (escaped
// when it holds escape sequences: keyName decodes it), where the key's opening quote is, and
// the bounds of its value.
type memberFunc func(key []byte, escaped bool, keyStart, start, end int)

// keyName is a member's name from its key's text.
func keyName(key []byte, escaped bool) string {
	if !escaped {
		return string(key)
	}
	var out string
	quoted := make([]byte, 0, len(key)+2)
	quoted = append(append(append(quoted, '"'), key...), '"')
	_ = json.Unmarshal(quoted, &out)
	return out
}

// object checks the object at i, calling member (when not nil) with each member, and returns
// where the object ends.
func (s *scanner) object(i int, member memberFunc) (int, error) {
	if err := s.nest(i); err != nil {
		return i, err
	}
	defer func() { s.depth-- }()
	i = s.space(i + 1)
	if i < len(s.data) && s.data[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(s.data) || s.data[i] != '"' {
			return i, s.fail(i, "looking for beginning of object key string")
		}
		keyStart := i
		end, escaped, err := s.string(i)
		if err != nil {
			return i, err
		}
		i = s.space(end)
		if i >= len(s.data) || s.data[i] != ':' {
			return i, s.fail(i, "after object key")
		}
		start := s.space(i + 1)
		if i, err = s.value(start); err != nil {
			return i, err
		}
		if member != nil {
			member(s.data[keyStart+1:end-1], escaped, keyStart, start, i)
		}
		i = s.space(i)
		if i >= len(s.data) {
			return i, s.fail(i, "")
		}
		switch s.data[i] {
		case ',':
			i = s.space(i + 1)
		case '}':
			return i + 1, nil
		default:
			return i, s.fail(i, "after object key:value pair")
		}
	}
}

// string checks the string at i and returns where it ends and whether it holds escapes.
func (s *scanner) string(i int) (int, bool, error) {
	if s.trusted {
		end, escaped := closingQuote(s.data, i)
		if end == len(s.data) {
			return end, false, s.fail(end, "")
		}
		return end + 1, escaped, nil
	}
	escaped := false
	for j := i + 1; j < len(s.data); j++ {
		// Most of a string is plain bytes: skip them eight at a time, then one by one.
		j = plainRun(s.data, j)
		for j < len(s.data) && !needsEscape[s.data[j]] {
			j++
		}
		if j == len(s.data) {
			break
		}
		switch c := s.data[j]; {
		case c == '"':
			return j + 1, escaped, nil
		case c == '\\':
			if j+1 >= len(s.data) || !validEscape(s.data[j+1:]) {
				return j, false, s.fail(j+1, "in string escape code")
			}
			escaped = true
			j++
		case c < 0x20:
			return j, false, s.fail(j, "in string literal")
		}
	}
	return len(s.data), false, s.fail(len(s.data), "")
}

// validEscape tells whether b (after a backslash) starts a JSON escape sequence.
func validEscape(b []byte) bool {
	switch b[0] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		if len(b) < 5 {
			return false
		}
		for _, h := range b[1:5] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		return true
	}
	return false
}

func (s *scanner) literal(i int, word string) (int, error) {
	for k := 0; k < len(word); k++ {
		if i+k >= len(s.data) || s.data[i+k] != word[k] {
			return i + k, s.fail(i+k, "in literal "+word)
		}
	}
	return i + len(word), nil
}

func (s *scanner) number(i int) (int, error) {
	j := i
	if s.trusted {
		for j < len(s.data) && (s.data[j] >= '0' && s.data[j] <= '9' || s.data[j] == '-' ||
			s.data[j] == '+' || s.data[j] == '.' || s.data[j] == 'e' || s.data[j] == 'E') {
			j++
		}
		return j, nil
	}
	if s.data[j] == '-' {
		j++
	}
	digits := func() int {
		start := j
		for j < len(s.data) && s.data[j] >= '0' && s.data[j] <= '9' {
			j++
		}
		return j - start
	}
	if j < len(s.data) && s.data[j] == '0' {
		j++
	} else if digits() == 0 {
		return j, s.fail(j, "in numeric literal")
	}
	if j < len(s.data) && s.data[j] == '.' {
		j++
		if digits() == 0 {
			return j, s.fail(j, "after decimal point in numeric literal")
		}
	}
	if j < len(s.data) && (s.data[j] == 'e' || s.data[j] == 'E') {
		j++
		if j < len(s.data) && (s.data[j] == '+' || s.data[j] == '-') {
			j++
		}
		if digits() == 0 {
			return j, s.fail(j, "in exponent of numeric literal")
		}
	}
	return j, nil
}

// plainRun is where the first group of eight bytes from i holding one a JSON string escapes
// starts (or the last whole group ends), testing each group in one word: a loop over bytes
// costs several WebAssembly instructions per byte in Go's code.
func plainRun(data []byte, i int) int {
	for ; i+8 <= len(data); i += 8 {
		w := word(data, i)
		quote, backslash := w^(ones*'"'), w^(ones*'\\')
		// A byte below 0x20, or one equal to a quote or a backslash (zero after the xor),
		// sets its high bit in the difference (for bytes below 0x80; above, ^w clears it).
		if ((w-ones*0x20)|(quote-ones)|(backslash-ones))&^w&highs != 0 {
			break
		}
	}
	return i
}

// needsEscape are the bytes a JSON string escapes.
var needsEscape = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// appendQuoted appends s as a JSON string, escaping what JSON requires (as serde_json writes
// strings: other characters as they are).
func appendQuoted(buf []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = !needsEscape[s[i]]
	}
	if plain {
		return append(append(append(buf, '"'), s...), '"')
	}
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c == '\n':
			buf = append(buf, '\\', 'n')
		case c == '\r':
			buf = append(buf, '\\', 'r')
		case c == '\t':
			buf = append(buf, '\\', 't')
		case c == '\b':
			buf = append(buf, '\\', 'b')
		case c == '\f':
			buf = append(buf, '\\', 'f')
		case c < 0x20:
			buf = append(buf, fmt.Sprintf(`\u%04x`, c)...)
		default:
			buf = append(buf, c)
		}
	}
	return append(buf, '"')
}
