package abi

import (
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"
)

// The protobuf wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// A map field is encoded as repeated entry messages with the key as field 1 and the value as
// field 2 (protobuf's map encoding, not spelled out in the .proto file).
const (
	mapEntryKey   = 1
	mapEntryValue = 2
)

var errTruncated = errors.New("unexpected end of message")

// encoder appends protobuf fields to buf.
type encoder struct {
	buf []byte
}

func (e *encoder) rawVarint(v uint64) {
	for v >= 0x80 {
		e.buf = append(e.buf, byte(v)|0x80)
		v >>= 7
	}
	e.buf = append(e.buf, byte(v))
}

func (e *encoder) tag(field, wire int) {
	e.rawVarint(uint64(field)<<3 | uint64(wire))
}

// uint writes a varint field, left out when zero (proto3's default).
func (e *encoder) uint(field int, v uint64) {
	if v != 0 {
		e.tag(field, wireVarint)
		e.rawVarint(v)
	}
}

// enum writes an enum field; a negative value takes ten bytes, as protobuf sign-extends int32.
func (e *encoder) enum(field int, v int32) {
	e.uint(field, uint64(int64(v)))
}

func (e *encoder) bool(field int, v bool) {
	if v {
		e.uint(field, 1)
	}
}

// string writes a string field, left out when empty.
func (e *encoder) string(field int, s string) {
	if s != "" {
		e.stringElement(field, s)
	}
}

// bytes writes a bytes field, left out when empty.
func (e *encoder) bytes(field int, b []byte) {
	if len(b) > 0 {
		e.element(field, b)
	}
}

// element writes a length-delimited field even when empty: an element of a repeated field, or
// a present message.
func (e *encoder) element(field int, b []byte) {
	e.tag(field, wireBytes)
	e.rawVarint(uint64(len(b)))
	e.buf = append(e.buf, b...)
}

func (e *encoder) stringElement(field int, s string) {
	e.tag(field, wireBytes)
	e.rawVarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// message writes a present sub-message (even an empty one, so its presence is kept).
func (e *encoder) message(field int, m interface{ encode(*encoder) }) {
	var sub encoder
	m.encode(&sub)
	e.element(field, sub.buf)
}

// packed writes a repeated enum field as one packed field, left out when empty.
func packed[E ~int32](e *encoder, field int, values []E) {
	if len(values) == 0 {
		return
	}
	var sub encoder
	for _, v := range values {
		sub.rawVarint(uint64(int64(v)))
	}
	e.element(field, sub.buf)
}

// field is one field read from a message: its number and wire type, and its value (varint for
// varint fields, data for length-delimited ones). The accessors record a wire-type mismatch in
// err, which fieldReader.next reports.
type field struct {
	num    int
	wire   int
	varint uint64
	data   []byte
	err    error
}

func (f *field) fail(want string) {
	if f.err == nil {
		f.err = fmt.Errorf("field %d: wire type %d where %s was expected", f.num, f.wire, want)
	}
}

func (f *field) uint() uint64 {
	if f.wire != wireVarint {
		f.fail("a varint")
		return 0
	}
	return f.varint
}

func (f *field) bool() bool { return f.uint() != 0 }

func (f *field) enum() int32 { return int32(f.uint()) }

func (f *field) bytes() []byte {
	if f.wire != wireBytes {
		f.fail("a length-delimited value")
		return nil
	}
	return f.data
}

func (f *field) string() string {
	b := f.bytes()
	if !utf8.Valid(b) {
		if f.err == nil {
			f.err = fmt.Errorf("field %d: string is not valid UTF-8", f.num)
		}
		return ""
	}
	// Shared with the message, as bytes fields are: a request's strings live as long as the
	// objects read from it, and a call allocates nothing for them.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// message decodes the field as a sub-message into m.
func (f *field) message(m interface{ Unmarshal([]byte) error }) {
	if b := f.bytes(); f.err == nil {
		f.wrap(m.Unmarshal(b))
	}
}

// wrap records err, the failure of the field's sub-message, as the field's.
func (f *field) wrap(err error) {
	if err != nil {
		f.err = fmt.Errorf("field %d: %w", f.num, err)
	}
}

// appendEnums appends a repeated enum field's values, packed or not.
func appendEnums[E ~int32](dst []E, f *field) []E {
	if f.wire == wireVarint {
		return append(dst, E(int32(f.varint)))
	}
	data := f.bytes()
	for len(data) > 0 && f.err == nil {
		v, n, err := readVarint(data)
		if err != nil {
			f.err = fmt.Errorf("field %d: %w", f.num, err)
			break
		}
		dst = append(dst, E(int32(v)))
		data = data[n:]
	}
	return dst
}

func readVarint(b []byte) (v uint64, n int, err error) {
	for shift := uint(0); n < len(b); shift += 7 {
		c := b[n]
		n++
		if n == 10 && c > 1 {
			return 0, 0, errors.New("varint overflows 64 bits")
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, n, nil
		}
	}
	return 0, 0, errTruncated
}

// fieldReader reads the fields of a message in order: for r.next() { use r.f }, then r.err.
// A decoder ignores the numbers it does not know, which skips unknown fields. (A loop rather
// than a callback per field: a field handed to a callback escapes to the heap, an allocation
// per message in every call.)
type fieldReader struct {
	data []byte
	f    field
	err  error
}

// next reads the next field into r.f; false at the end of the message or at an error (in
// r.err, which a decoder's failure on the previous field sets too).
func (r *fieldReader) next() bool {
	if r.f.err != nil {
		return r.fail(r.f.err)
	}
	if len(r.data) == 0 || r.err != nil {
		return false
	}
	key, n, err := readVarint(r.data)
	if err != nil {
		return r.fail(err)
	}
	b := r.data[n:]
	r.f = field{num: int(key >> 3), wire: int(key & 7)}
	if key>>3 == 0 || key>>3 > 1<<29-1 {
		return r.fail(fmt.Errorf("invalid field number %d", key>>3))
	}
	switch r.f.wire {
	case wireVarint:
		if r.f.varint, n, err = readVarint(b); err != nil {
			return r.fail(err)
		}
	case wireFixed64, wireFixed32:
		n = 8
		if r.f.wire == wireFixed32 {
			n = 4
		}
		if len(b) < n {
			return r.fail(errTruncated)
		}
	case wireBytes:
		size, m, err := readVarint(b)
		if err != nil {
			return r.fail(err)
		}
		if size > uint64(len(b)-m) {
			return r.fail(errTruncated)
		}
		r.f.data = b[m : m+int(size)]
		n = m + int(size)
	default:
		return r.fail(fmt.Errorf("field %d: unsupported wire type %d", r.f.num, r.f.wire))
	}
	r.data = b[n:]
	return true
}

// fail ends the reading with err.
func (r *fieldReader) fail(err error) bool {
	r.err = err
	return false
}
