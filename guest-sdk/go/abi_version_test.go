package sdk_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"strategyhost.dev/sdk"
)

// rustConstant reads `pub const <name>: u32 = N;` from a Rust source file of this repository.
func rustConstant(t *testing.T, path, name string) int {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^pub const ` + name + `: u32 = (\d+);`).FindSubmatch(src)
	if m == nil {
		t.Fatalf("%s: no `pub const %s: u32`", path, name)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// The two SDKs speak one ABI version: a feature added to the Rust SDK (and the proto) fails
// here until the Go SDK has it, and neither may claim a version the host does not serve.
func TestTheGoSDKSpeaksTheRustSDKsABIVersion(t *testing.T) {
	rust := [2]int{rustConstant(t, "../src/lib.rs", "ABI_VERSION"), rustConstant(t, "../src/lib.rs", "ABI_MINOR_VERSION")}
	if got := [2]int{sdk.ABIVersion, sdk.ABIMinorVersion}; got != rust {
		t.Errorf("the Go SDK speaks ABI %d.%d, the Rust SDK %d.%d", got[0], got[1], rust[0], rust[1])
	}
	host := "../../wasm-runtime/src/abi.rs"
	if major, minor := rustConstant(t, host, "ABI_VERSION"), rustConstant(t, host, "ABI_MINOR_VERSION"); sdk.ABIVersion != major || sdk.ABIMinorVersion > minor {
		t.Errorf("the Go SDK speaks ABI %d.%d, the host serves %d.0 to %d.%d", sdk.ABIVersion, sdk.ABIMinorVersion, major, major, minor)
	}
}
