package sdk

// LazyObject: a JSON object whose members stay unparsed until a strategy reads or changes them,
// as the Rust SDK's LazyObject. Decoding a whole object into structs or maps and encoding it
// back is most of a call when a strategy looks at a handful of fields; a LazyObject keeps each
// member as the text it arrived as, a read parses only the path it names, a change opens only
// the objects on its path, and the answer is the changes alone, as a JSON Patch (ABI 1.4).

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// LazyObject is a JSON object whose members are parsed on demand. Use *LazyObject hooks
// (Strategy[LazyObject]) when a strategy reads or defaults a few fields of large objects. A
// member that is null reads as absent. The zero value is an empty object.
type LazyObject struct {
	members []member
	// removed are names of the input's members the strategy removed.
	removed []string
}

type memberKind uint8

const (
	// rawMember is the input's text, untouched.
	rawMember memberKind = iota
	// openedMember is the input's object, opened for a change below it.
	openedMember
	// valueMember is a value the strategy set.
	valueMember
	// newMember is an object the strategy made (from an absent or null member, or a value).
	newMember
	// copiedMember is text taken from another object (CopyMember).
	copiedMember
)

type member struct {
	name  string
	kind  memberKind
	raw   []byte
	obj   *LazyObject
	value any
}

// ParseLazyObject parses a JSON object, checking its syntax but parsing no member's value. The
// object keeps data (it holds its members' text): data must not change afterwards.
func ParseLazyObject(data []byte) (*LazyObject, error) {
	return parse(scanner{data: data})
}

// parseTrusted parses an object within text already checked, or an object the host sent: the
// host encodes every object it sends itself, so checking its members' syntax again would only
// cost a call its largest part. The object's own braces, keys and separators are still read
// as ParseLazyObject reads them, so a truncated or foreign text is refused.
func parseTrusted(data []byte) (*LazyObject, error) {
	return parse(scanner{data: data, trusted: true})
}

func parse(s scanner) (*LazyObject, error) {
	data := s.data
	o := withRoom(true)
	i := s.space(0)
	if i >= len(data) || data[i] != '{' {
		if i < len(data) {
			return nil, fmt.Errorf("invalid type: %s, expected a JSON object", describe(bytes.TrimSpace(data)))
		}
		return nil, s.fail(i, "")
	}
	end, err := s.object(i, func(key []byte, escaped bool, _, start, end int) {
		o.members = append(o.members, member{name: memberName(key, escaped), raw: data[start:end]})
	})
	if err != nil {
		return nil, err
	}
	if s.space(end) != len(data) {
		return nil, s.fail(s.space(end), "after top-level value")
	}
	return o, nil
}

// withRoom is an empty LazyObject with room for its first members in the same allocation (an
// allocation costs more than the room): eight for an object the parser fills, four for one a
// strategy makes (from an absent or null member).
func withRoom(parsed bool) *LazyObject {
	if parsed {
		r := &struct {
			object LazyObject
			room   [8]member
		}{}
		r.object.members = r.room[:0]
		return &r.object
	}
	r := &struct {
		object LazyObject
		room   [4]member
	}{}
	r.object.members = r.room[:0]
	return &r.object
}

// memberName is a member's name, sharing the parsed text's bytes when it holds no escapes: a
// LazyObject never changes the text it parsed (ParseLazyObject's caller must not either), and
// the name keeps that text alive as its members' values do.
func memberName(key []byte, escaped bool) string {
	if escaped || len(key) == 0 {
		return keyName(key, escaped)
	}
	return unsafe.String(&key[0], len(key))
}

// UnmarshalJSON parses data as ParseLazyObject does (keeping a copy of it).
func (o *LazyObject) UnmarshalJSON(data []byte) error {
	parsed, err := ParseLazyObject(bytes.Clone(data))
	if err != nil {
		return err
	}
	*o = *parsed
	return nil
}

// MarshalJSON writes the object: untouched members as the text they arrived as.
func (o *LazyObject) MarshalJSON() ([]byte, error) {
	return o.appendJSON(make([]byte, 0, 256))
}

func (o *LazyObject) appendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, '{')
	for i := range o.members {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(appendQuoted(buf, o.members[i].name), ':')
		var err error
		if buf, err = o.members[i].appendJSON(buf); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

func (m *member) appendJSON(buf []byte) ([]byte, error) {
	switch m.kind {
	case rawMember, copiedMember:
		return append(buf, m.raw...), nil
	case openedMember, newMember:
		return m.obj.appendJSON(buf)
	}
	switch v := m.value.(type) {
	case string:
		if utf8.ValidString(v) {
			return appendQuoted(buf, v), nil
		}
	case int:
		return strconv.AppendInt(buf, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(buf, v, 10), nil
	case bool:
		return strconv.AppendBool(buf, v), nil
	case nil:
		return append(buf, "null"...), nil
	}
	text, err := EncodeJSON(m.value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.name, err)
	}
	return append(buf, text...), nil
}

// position is where member name is (the last one, as a parser keeps the last of duplicates).
func (o *LazyObject) position(name string) int {
	for i := len(o.members) - 1; i >= 0; i-- {
		if o.members[i].name == name {
			return i
		}
	}
	return -1
}

// Object is the object at path, opened for changes; absent or null members on the path become
// empty objects. nil when a member on the path holds something other than an object.
func (o *LazyObject) Object(path ...string) *LazyObject {
	object := o
	for _, name := range path {
		at := object.position(name)
		if at < 0 {
			object.members = append(object.members, member{name: name, kind: newMember, obj: withRoom(false)})
			at = len(object.members) - 1
		}
		m := &object.members[at]
		if !m.open() {
			return nil
		}
		object = m.obj
	}
	return object
}

// open makes m an object to change (opened or new); false, leaving it as it is, when it is
// neither an object nor null.
func (m *member) open() bool {
	switch m.kind {
	case openedMember, newMember:
		return true
	case rawMember, copiedMember:
		switch m.raw[0] {
		case '{':
			inner, err := parseTrusted(m.raw)
			if err != nil {
				return false
			}
			m.obj = inner
			if m.kind == rawMember {
				m.kind = openedMember
			} else {
				m.kind = newMember
			}
		case 'n':
			m.kind, m.obj = newMember, withRoom(false)
		default:
			return false
		}
		m.raw = nil
		return true
	}
	switch v := m.value.(type) {
	case nil:
		m.obj = withRoom(false)
	case map[string]any:
		// In key order, as encoding/json writes a map.
		m.obj = &LazyObject{}
		for _, name := range slices.Sorted(maps.Keys(v)) {
			m.obj.members = append(m.obj.members, member{name: name, kind: valueMember, value: v[name]})
		}
	default:
		return false
	}
	m.kind, m.value = newMember, nil
	return true
}

// Set sets member name to value, in place when present, else after the others.
func (o *LazyObject) Set(name string, value any) {
	m := member{name: name, kind: valueMember, value: value}
	if at := o.position(name); at >= 0 {
		o.members[at] = m
	} else {
		o.members = append(o.members, m)
	}
}

// SetIfAbsent sets member name to value only when it is absent or null (a default); true when
// it did.
func (o *LazyObject) SetIfAbsent(name string, value any) bool {
	if at := o.position(name); at >= 0 && !o.members[at].node().isNull() {
		return false
	}
	o.Set(name, value)
	return true
}

// Remove removes member name; true when it was there.
func (o *LazyObject) Remove(name string) bool {
	kept, input := o.members[:0], false
	for _, m := range o.members {
		if m.name == name {
			input = input || m.kind == rawMember || m.kind == openedMember
			continue
		}
		kept = append(kept, m)
	}
	removed := len(kept) != len(o.members)
	clear(o.members[len(kept):])
	o.members = kept
	if input && !slices.Contains(o.removed, name) {
		o.removed = append(o.removed, name)
	}
	return removed
}

// CopyMember makes member name what it is in other (absent when it is absent there), copying
// its text without parsing it: e.g. keeping the old object's status on an update.
func (o *LazyObject) CopyMember(other *LazyObject, name string) {
	at := other.position(name)
	if at < 0 {
		o.Remove(name)
		return
	}
	src := other.members[at]
	m := member{name: name, kind: copiedMember, raw: src.raw}
	switch src.kind {
	case openedMember, newMember:
		text, err := src.obj.MarshalJSON()
		if err != nil {
			m = member{name: name, kind: valueMember, value: nil}
		} else {
			m.raw = text
		}
	case valueMember:
		m = member{name: name, kind: valueMember, value: src.value}
	}
	if mine := o.position(name); mine >= 0 {
		o.members[mine] = m
	} else {
		o.members = append(o.members, m)
	}
}

// Names are the members' names, in order.
func (o *LazyObject) Names() []string {
	names := make([]string, len(o.members))
	for i := range o.members {
		names[i] = o.members[i].name
	}
	return names
}

// Len is the number of members.
func (o *LazyObject) Len() int { return len(o.members) }

// JSONPatch is the changes made since the object was parsed, as a JSON Patch (RFC 6902) of
// remove and add operations; empty when nothing changed. It is what a module answers instead
// of the whole object (ABI 1.4).
func (o *LazyObject) JSONPatch() ([]byte, error) {
	ops, err := o.appendPatch(make([]byte, 0, 512), make([]byte, 0, 64))
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	ops[0] = '['
	return append(ops, ']'), nil
}

// appendPatch appends this object's changes as ",{op}" items, their paths below path (a JSON
// Pointer, whose buffer it extends and restores).
func (o *LazyObject) appendPatch(ops, path []byte) ([]byte, error) {
	base := len(path)
	for _, name := range o.removed {
		if o.position(name) < 0 {
			path = appendToken(path[:base], name)
			ops = append(appendOp(ops, "remove", path), '}')
		}
	}
	for i := range o.members {
		m := &o.members[i]
		if m.kind == rawMember {
			continue
		}
		path = appendToken(path[:base], m.name)
		var err error
		if m.kind == openedMember {
			ops, err = m.obj.appendPatch(ops, path)
		} else {
			ops = append(appendOp(ops, "add", path), `,"value":`...)
			ops, err = m.appendJSON(ops)
			ops = append(ops, '}')
		}
		if err != nil {
			return nil, err
		}
	}
	return ops, nil
}

// appendOp appends `,{"op":op,"path":path` (the caller closes it).
func appendOp(ops []byte, op string, path []byte) []byte {
	ops = append(append(append(ops, `,{"op":"`...), op...), `","path":`...)
	return appendQuoted(ops, unsafe.String(unsafe.SliceData(path), len(path)))
}

// appendToken appends "/name" to a JSON Pointer, escaped (RFC 6901).
func appendToken(path []byte, name string) []byte {
	path = append(path, '/')
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '~':
			path = append(path, '~', '0')
		case '/':
			path = append(path, '~', '1')
		default:
			path = append(path, name[i])
		}
	}
	return path
}
