package sdktest

// Applying a module's JSON Patch answer (ABI 1.4) to the object it was sent, as the host does:
// the add and remove operations a LazyObject answers, on object members.

import (
	"fmt"
	"strings"

	"strategyhost.dev/sdk"
)

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

func applyPatch(obj map[string]any, patch []byte) error {
	var ops []patchOp
	if err := sdk.DecodeJSON(patch, &ops); err != nil {
		return err
	}
	for _, op := range ops {
		tokens := strings.Split(op.Path, "/")
		if len(tokens) < 2 || tokens[0] != "" {
			return fmt.Errorf("%q is not a JSON Pointer to a member", op.Path)
		}
		parent := obj
		for _, t := range tokens[1 : len(tokens)-1] {
			child, ok := parent[unescape(t)].(map[string]any)
			if !ok {
				return fmt.Errorf("%q: no object at %q", op.Path, t)
			}
			parent = child
		}
		name := unescape(tokens[len(tokens)-1])
		switch op.Op {
		case "add":
			parent[name] = op.Value
		case "remove":
			if _, ok := parent[name]; !ok {
				return fmt.Errorf("%q: nothing to remove", op.Path)
			}
			delete(parent, name)
		default:
			return fmt.Errorf("unexpected operation %q", op.Op)
		}
	}
	return nil
}

func unescape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
}
