package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// maxDepth is how deep JSON may nest: serde_json's recursion limit, which objects decoded by
// the Rust SDK have, so both SDKs refuse the same objects.
const maxDepth = 128

// DecodeJSON decodes data into v as the SDK decodes objects: numbers decoded into an interface
// become json.Number, so integers survive exactly; data must hold exactly one JSON value,
// nested less than 128 deep. Use it in a custom UnmarshalJSON to decode the parts of an object
// the same way.
func DecodeJSON(data []byte, v any) error {
	if err := checkDepth(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		if err == io.EOF {
			return errors.New("EOF while parsing a value")
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing characters")
	}
	return nil
}

// EncodeJSON encodes v as the SDK encodes objects: compact, and without escaping <, > and &
// (as serde_json writes them).
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return unescapeSeparators(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// unescapeSeparators writes U+2028 and U+2029 as themselves, as serde_json does, where
// encoding/json escapes them (\u2028): the same text byte for byte. Every backslash in
// encoding/json's output starts an escape sequence, so a scan that steps over escapes finds
// exactly those two.
func unescapeSeparators(data []byte) []byte {
	if !bytes.Contains(data, []byte(`\u202`)) {
		return data
	}
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); i++ {
		switch {
		case data[i] != '\\' || i+1 >= len(data):
			out = append(out, data[i])
		case bytes.HasPrefix(data[i:], []byte(`\u2028`)):
			out = append(out, "\u2028"...)
			i += 5
		case bytes.HasPrefix(data[i:], []byte(`\u2029`)):
			out = append(out, "\u2029"...)
			i += 5
		default:
			out = append(out, data[i], data[i+1])
			i++
		}
	}
	return out
}

// checkDepth refuses JSON nested maxDepth deep or more.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		switch {
		case inString:
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth >= maxDepth {
				return errors.New("recursion limit exceeded")
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}
