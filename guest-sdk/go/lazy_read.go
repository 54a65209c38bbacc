package sdk

// Reading a LazyObject: a path's value as its JSON text (Raw), decoded (Get), as a string or a
// map of strings (StringAt, StringMapAt), or whether it is there (Has). Each parses only the
// members on its path.

import (
	"fmt"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// MemberError is a read that met a value of the wrong type on its path.
type MemberError struct {
	// Path is the member's path, its names joined by dots (spec.replicas).
	Path string
	// Reason is what was wrong, e.g. "expected an object, found a string".
	Reason string
}

func (e *MemberError) Error() string { return e.Path + ": " + e.Reason }

// node is a value on a read's path: raw text, a LazyObject, or a value the strategy set.
type node struct {
	raw   []byte
	obj   *LazyObject
	value any
}

func (m *member) node() node {
	switch m.kind {
	case rawMember, copiedMember:
		return node{raw: m.raw}
	case openedMember, newMember:
		return node{obj: m.obj}
	}
	return node{value: m.value}
}

func (n node) isNull() bool {
	switch {
	case n.obj != nil:
		return false
	case n.raw != nil:
		return string(n.raw) == "null"
	}
	return n.value == nil
}

// child is member name of n: found false when n is null or lacks it, an error when n is not an
// object.
func (n node) child(name string) (node, bool, error) {
	switch {
	case n.obj != nil:
		if at := n.obj.position(name); at >= 0 {
			return n.obj.members[at].node(), true, nil
		}
		return node{}, false, nil
	case n.raw != nil:
		switch n.raw[0] {
		case '{':
			var found []byte
			s := scanner{data: n.raw, trusted: true}
			_, err := s.object(0, func(key []byte, escaped bool, _, start, end int) {
				if (memberKey{key, escaped}).is(name) {
					found = n.raw[start:end]
				}
			})
			return node{raw: found}, found != nil && err == nil, err
		case 'n':
			return node{}, false, nil
		}
		return node{}, false, fmt.Errorf("expected an object, found %s", kindOf(n.raw[0]))
	}
	switch v := n.value.(type) {
	case nil:
		return node{}, false, nil
	case map[string]any:
		value, ok := v[name]
		return node{value: value}, ok, nil
	}
	return node{}, false, fmt.Errorf("expected an object, found %s", kindOfValue(n.value))
}

// kindOf names a JSON value by its first byte, as serde_json names value types.
func kindOf(first byte) string {
	switch first {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func kindOfValue(v any) string {
	text, err := EncodeJSON(v)
	if err != nil || len(text) == 0 {
		return "a value"
	}
	return kindOf(text[0])
}

// Raw is the JSON text of the value at path; nil when a member on the path is absent or null,
// a *MemberError when a member on the path is not an object. The text is the input's own for
// an untouched member: a decoder such as DecodeString or DecodeStringMap reads it with serde's
// errors, DecodeJSON with encoding/json's.
func (o *LazyObject) Raw(path ...string) ([]byte, error) {
	n, err := o.find(path)
	if err != nil || n.isNull() {
		return nil, err
	}
	return n.json()
}

// StringAt is the string at path: "" when a member on the path is absent or null; DecodeString's
// error when the value is not a string, a *MemberError when a member on the path is not an
// object. A string the strategy set is read as it is, one of the input as its text (no copy
// when it holds no escapes).
func (o *LazyObject) StringAt(path ...string) (string, error) {
	n, err := o.find(path)
	if err != nil || n.isNull() {
		return "", err
	}
	if s, ok := n.value.(string); ok && n.raw == nil && n.obj == nil && utf8.ValidString(s) {
		return s, nil
	}
	raw, err := n.json()
	if err != nil {
		return "", err
	}
	return sharedString(raw)
}

// sharedString reads a LazyObject's JSON text as DecodeString does, but shares a string without
// escapes with the text instead of copying it: a LazyObject's text never changes (see
// ParseLazyObject).
func sharedString(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && isPlain(raw[1:len(raw)-1]) {
		return unsafe.String(&raw[1], len(raw)-2), nil
	}
	return DecodeString(raw)
}

// StringMapAt is the object of strings at path (labels, annotations, a selector's matchLabels):
// nil when a member on the path is absent or null; DecodeStringMap's error when the value is
// not an object of strings, a *MemberError when a member on the path is not an object. The
// input's keys and strings without escapes are shared, not copied.
func (o *LazyObject) StringMapAt(path ...string) (map[string]string, error) {
	n, err := o.find(path)
	if err != nil || n.isNull() {
		return nil, err
	}
	if n.raw == nil || n.raw[0] != '{' {
		raw, err := n.json()
		if err != nil {
			return nil, err
		}
		return DecodeStringMap(raw)
	}
	m := map[string]string{}
	var failed error
	s := scanner{data: n.raw, trusted: true}
	_, err = s.object(0, func(key []byte, escaped bool, _, start, end int) {
		if failed != nil {
			return
		}
		// On failure, the error DecodeStringMap gives.
		m[memberName(key, escaped)], failed = sharedString(n.raw[start:end])
	})
	if failed != nil {
		return nil, failed
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// find is the node at path (the zero node when a member on it is absent).
func (o *LazyObject) find(path []string) (node, error) {
	n := node{obj: o}
	for depth, name := range path {
		child, found, err := n.child(name)
		if err != nil {
			return node{}, &MemberError{Path: strings.Join(path[:depth], "."), Reason: err.Error()}
		}
		if !found {
			return node{}, nil
		}
		n = child
	}
	return n, nil
}

// json is n's JSON text: the input's own when it is untouched.
func (n node) json() ([]byte, error) {
	switch {
	case n.raw != nil:
		return n.raw, nil
	case n.obj != nil:
		return n.obj.MarshalJSON()
	}
	m := member{kind: valueMember, value: n.value}
	return m.appendJSON(nil)
}

// Get decodes the value at path into v (with DecodeJSON): found false, v untouched, when a
// member on the path is absent or null; a *MemberError when the path or the value does not
// decode.
func (o *LazyObject) Get(v any, path ...string) (found bool, err error) {
	raw, err := o.Raw(path...)
	if err != nil || raw == nil {
		return false, err
	}
	if err := DecodeJSON(raw, v); err != nil {
		return false, &MemberError{Path: strings.Join(path, "."), Reason: err.Error()}
	}
	return true, nil
}

// Has tells whether the value at path is present and not null.
func (o *LazyObject) Has(path ...string) bool {
	raw, err := o.Raw(path...)
	return err == nil && raw != nil
}
