package sdk

import "strings"

// ObjectMeta is the common part of `metadata` for typed objects, keeping every member it does
// not name in Rest, as the Rust SDK's meta::ObjectMeta does, with the same rules: Name,
// Namespace, Labels and Annotations must be strings (null is refused), and an empty one is left
// out when encoding.
type ObjectMeta struct {
	Name        string
	Namespace   string
	Labels      map[string]string
	Annotations map[string]string
	// Rest is every other member (uid, resourceVersion, ...), kept as is.
	Rest map[string]any
}

// UnmarshalJSON decodes metadata.
func (m *ObjectMeta) UnmarshalJSON(data []byte) error {
	*m = ObjectMeta{}
	rest, err := DecodeObject(data, "struct ObjectMeta", []string{"name", "namespace", "labels", "annotations"},
		func(name string, raw []byte) (err error) {
			switch name {
			case "name":
				m.Name, err = DecodeString(raw)
			case "namespace":
				m.Namespace, err = DecodeString(raw)
			case "labels":
				m.Labels, err = DecodeStringMap(raw)
			case "annotations":
				m.Annotations, err = DecodeStringMap(raw)
			}
			return err
		})
	m.Rest = rest
	return err
}

// MarshalJSON encodes metadata: name, namespace, labels, annotations (each unless empty), then
// Rest in key order.
func (m ObjectMeta) MarshalJSON() ([]byte, error) {
	var members []Member
	if m.Name != "" {
		members = append(members, Member{"name", m.Name})
	}
	if m.Namespace != "" {
		members = append(members, Member{"namespace", m.Namespace})
	}
	if len(m.Labels) > 0 {
		members = append(members, Member{"labels", m.Labels})
	}
	if len(m.Annotations) > 0 {
		members = append(members, Member{"annotations", m.Annotations})
	}
	return JoinObject(members, m.Rest)
}

// Accessors for objects decoded as map[string]any.

// Name is metadata.name of an object, if it is a string.
func Name(obj map[string]any) (string, bool) { return metadataString(obj, "name") }

// Namespace is metadata.namespace of an object, if it is a string.
func Namespace(obj map[string]any) (string, bool) { return metadataString(obj, "namespace") }

func metadataString(obj map[string]any, key string) (string, bool) {
	meta, _ := obj["metadata"].(map[string]any)
	s, ok := meta[key].(string)
	return s, ok
}

// Labels is metadata.labels of an object (empty when unset; non-string values are skipped).
func Labels(obj map[string]any) map[string]string {
	return stringMap(obj, "labels")
}

// Annotation is metadata.annotations[key] of an object, if it is a string.
func Annotation(obj map[string]any, key string) (string, bool) {
	s, ok := stringMap(obj, "annotations")[key]
	return s, ok
}

func stringMap(obj map[string]any, field string) map[string]string {
	meta, _ := obj["metadata"].(map[string]any)
	values, _ := meta[field].(map[string]any)
	out := map[string]string{}
	for k, v := range values {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// SetLabel sets metadata.labels[key] = value, creating metadata and labels as needed (and
// replacing whatever is not an object on the way).
func SetLabel(obj map[string]any, key, value string) {
	metadataMap(obj, "labels")[key] = value
}

// SetAnnotation sets metadata.annotations[key] = value, creating metadata and annotations as
// needed.
func SetAnnotation(obj map[string]any, key, value string) {
	metadataMap(obj, "annotations")[key] = value
}

// RemoveAnnotation removes metadata.annotations[key], and annotations itself when that leaves
// it empty.
func RemoveAnnotation(obj map[string]any, key string) {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, ok := meta["annotations"].(map[string]any)
	if !ok {
		return
	}
	delete(annotations, key)
	if len(annotations) == 0 {
		delete(meta, "annotations")
	}
}

func metadataMap(obj map[string]any, field string) map[string]any {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	m, ok := meta[field].(map[string]any)
	if !ok {
		m = map[string]any{}
		meta[field] = m
	}
	return m
}

// DNS1123LabelErrors are the problems with a DNS-1123 label ([a-z0-9]([-a-z0-9]*[a-z0-9])?, at
// most 63 characters); empty when valid. The messages are Kubernetes' (and the Rust SDK's).
func DNS1123LabelErrors(value string) []string {
	var errs []string
	if len(value) > 63 {
		errs = append(errs, "must be no more than 63 characters")
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	ok := value != "" && alnum(value[0]) && alnum(value[len(value)-1])
	for i := 0; ok && i < len(value); i++ {
		ok = alnum(value[i]) || value[i] == '-'
	}
	if !ok {
		errs = append(errs, "a lowercase RFC 1123 label must consist of lower case alphanumeric "+
			"characters or '-', and must start and end with an alphanumeric character")
	}
	return errs
}

// ConfigMapKeyErrors are the problems with a ConfigMap or Secret key ([-._a-zA-Z0-9]+, at most
// 253 characters, not . or ..); empty when valid.
func ConfigMapKeyErrors(value string) []string {
	var errs []string
	if len(value) > 253 {
		errs = append(errs, "must be no more than 253 characters")
	}
	valid := value != "" && strings.Trim(value, "-._abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == ""
	if !valid {
		errs = append(errs, "a valid config key must consist of alphanumeric characters, '-', '_' or '.'")
	}
	if value == "." || value == ".." {
		errs = append(errs, "must not be '"+value+"'")
	}
	return errs
}
