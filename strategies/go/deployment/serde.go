package main

import (
	"encoding/json"
	"strconv"
	"strings"
)

// What the Rust module's answers depend on beyond decoding: how serde_json reads a number
// (as_i64 and equality).

// number is a JSON number as serde_json holds it: a non-negative integer (u64), a negative
// one (i64), or anything else as a float (a fraction, an exponent, -0, or an integer too big).
type number struct {
	kind byte // 'u', 'i' or 'f'
	u    uint64
	i    int64
	f    float64
}

func parseNumber(v any) (number, bool) {
	switch n := v.(type) {
	case json.Number:
		return parseNumberText(string(n))
	case int:
		return parseNumberText(strconv.Itoa(n))
	case int64:
		return parseNumberText(strconv.FormatInt(n, 10))
	case float64:
		return number{kind: 'f', f: n}, true
	}
	return number{}, false
}

// parseNumberText reads a JSON number's text.
func parseNumberText(text string) (number, bool) {
	if !strings.ContainsAny(text, ".eE") {
		if u, err := strconv.ParseUint(text, 10, 64); err == nil {
			return number{kind: 'u', u: u}, true
		}
		if i, err := strconv.ParseInt(text, 10, 64); err == nil && i < 0 {
			return number{kind: 'i', i: i}, true
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && f == 0 {
		return number{}, false
	}
	return number{kind: 'f', f: f}, true
}

// rawI64 is serde_json's Value::as_i64 (an integer that fits in an i64) of a member's JSON
// text, read without decoding it to a value first.
func rawI64(raw []byte) (int64, bool) {
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, false
	}
	n, ok := parseNumberText(string(raw))
	return n.asI64(ok)
}

// asI64 is the number as an i64, when ok and it is an integer that fits.
func (n number) asI64(ok bool) (int64, bool) {
	switch {
	case !ok:
		return 0, false
	case n.kind == 'u' && n.u <= 1<<63-1:
		return int64(n.u), true
	case n.kind == 'i':
		return n.i, true
	}
	return 0, false
}

// equal is serde_json's Value equality: numbers equal when of the same kind and value (1 and
// 1.0 differ, 1.0 and 1.00 do not).
func equal(a, b any) bool {
	switch x := a.(type) {
	case nil, bool, string:
		return a == b
	case []any:
		y, ok := b.([]any)
		return ok && equalSlices(x, y)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	}
	m, ok := parseNumber(a)
	n, ok2 := parseNumber(b)
	return ok && ok2 && m == n
}

func equalSlices(x, y []any) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !equal(x[i], y[i]) {
			return false
		}
	}
	return true
}

// selectorsEqual compares two selectors as the Rust module does (absent equals only absent;
// an empty member equals an absent one).
func selectorsEqual(a, b *LabelSelector) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.MatchLabels) != len(b.MatchLabels) || !equalSlices(a.MatchExpressions, b.MatchExpressions) {
		return false
	}
	for k, v := range a.MatchLabels {
		if w, ok := b.MatchLabels[k]; !ok || w != v {
			return false
		}
	}
	return true
}
