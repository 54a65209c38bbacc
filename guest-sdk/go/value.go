package sdk

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
)

// RenderValue renders a field error's bad value as Kubernetes' field.Error does, so a Go
// module, a Rust module and kube-apiserver word the same mistake alike: a string quoted
// (strconv.Quote), a number or bool as %v prints it (-1, 0.5, 1e+06), a json.Number as the
// number it holds, nil (or a nil pointer or map) as null, a map[string]string as %#v prints it
// (map[string]string{"app":"web"}), a fmt.Stringer by its String. Anything else is compact
// JSON, the rendering the Rust SDK shares for objects and lists.
func RenderValue(value any) string {
	switch v := value.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
		float32, float64:
		return fmt.Sprint(v)
	case json.Number:
		return renderNumber(v)
	case map[string]string:
		if v == nil {
			return "null"
		}
		return fmt.Sprintf("%#v", v)
	case fmt.Stringer:
		return v.String()
	}
	if rv := reflect.ValueOf(value); rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return "null"
		}
		return RenderValue(rv.Elem().Interface())
	}
	data, err := EncodeJSON(value)
	if err != nil {
		return fmt.Sprintf("%#v", value)
	}
	return string(data)
}

// renderNumber is a JSON number as the Rust SDK reads it: an integer exactly, anything else as
// a float64.
func renderNumber(n json.Number) string {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return strconv.FormatInt(i, 10)
	}
	if u, err := strconv.ParseUint(string(n), 10, 64); err == nil {
		return strconv.FormatUint(u, 10)
	}
	if f, err := n.Float64(); err == nil {
		return fmt.Sprint(f)
	}
	return string(n)
}
