package sdk

// A JSON scanner for LazyObject: finds where each member of an object starts and ends,
// checking the syntax as it goes, without building any value. encoding/json has no way to
// hand out a member's text unparsed short of decoding into json.RawMessage, which runs its
// scanner over the text twice and allocates per member.

import (
	"encoding/json"
	"errors"
	"fmt"
)

// scanner walks one JSON text.
type scanner struct {
	data  []byte
	depth int
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

// value checks the value starting at i (after any space) and returns where it ends.
func (s *scanner) value(i int) (int, error) {
	i = s.space(i)
	if i >= len(s.data) {
		return i, s.fail(i, "")
	}
	switch c := s.data[i]; {
	case c == '{':
		return s.object(i, nil)
	case c == '[':
		return s.array(i)
	case c == '"':
		end, _, err := s.string(i)
		return end, err
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(i)
	}
	return i, s.fail(i, "looking for beginning of value")
}

func (s *scanner) nest(i int) error {
	s.depth++
	if s.depth > maxDepth {
		return fmt.Errorf("exceeded max depth of %d at offset %d", maxDepth, i)
	}
	return nil
}

// object checks the object at i, calling member (when not nil) with each member's name and the
// bounds of its value, and returns where the object ends.
func (s *scanner) object(i int, member func(name string, start, end int)) (int, error) {
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
		end, name, err := s.string(i)
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
			member(name, start, i)
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

func (s *scanner) array(i int) (int, error) {
	if err := s.nest(i); err != nil {
		return i, err
	}
	defer func() { s.depth-- }()
	i = s.space(i + 1)
	if i < len(s.data) && s.data[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if i, err = s.value(i); err != nil {
			return i, err
		}
		i = s.space(i)
		if i >= len(s.data) {
			return i, s.fail(i, "")
		}
		switch s.data[i] {
		case ',':
			i++
		case ']':
			return i + 1, nil
		default:
			return i, s.fail(i, "after array element")
		}
	}
}

// string checks the string at i and returns where it ends and its value (decoded only when it
// holds escapes).
func (s *scanner) string(i int) (int, string, error) {
	escaped := false
	for j := i + 1; j < len(s.data); j++ {
		switch c := s.data[j]; {
		case c == '"':
			if !escaped {
				return j + 1, string(s.data[i+1 : j]), nil
			}
			var out string
			if err := json.Unmarshal(s.data[i:j+1], &out); err != nil {
				return j, "", err
			}
			return j + 1, out, nil
		case c == '\\':
			escaped = true
			j++
		case c < 0x20:
			return j, "", s.fail(j, "in string literal")
		}
	}
	return len(s.data), "", s.fail(len(s.data), "")
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

// appendQuoted appends s as a JSON string, escaping what JSON requires (as serde_json writes
// strings: other characters as they are).
func appendQuoted(buf []byte, s string) []byte {
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
