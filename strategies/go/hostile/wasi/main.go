// Command wasi is a hostile fixture: its Validate reaches for what WASI could grant (a file,
// the environment, the arguments, the network, a writable file system, an hour's sleep) and the
// create's warnings say what each returned, so a host test can assert nothing was granted and
// the sleep did not hold the call.
package main

import (
	"fmt"
	"net"
	"os"
	"time"

	"strategyhost.dev/examples/hostile/widget"
	"strategyhost.dev/sdk"
)

type prober struct{}

// last is what the Validate of the current call found, for its WarningsOnCreate.
var last []string

func probe() []string {
	var found []string
	data, err := os.ReadFile("/etc/passwd")
	found = append(found, fmt.Sprintf("os.ReadFile(/etc/passwd): %d bytes, error: %v", len(data), err))
	entries, err := os.ReadDir("/")
	found = append(found, fmt.Sprintf("os.ReadDir(/): %d entries, error: %v", len(entries), err))
	err = os.WriteFile("/tmp/hostile-go-wasi", []byte("x"), 0o600)
	found = append(found, fmt.Sprintf("os.WriteFile(/tmp/hostile-go-wasi): error: %v", err))
	found = append(found, fmt.Sprintf("os.Getenv(HOME): %q", os.Getenv("HOME")))
	found = append(found, fmt.Sprintf("os.Environ(): %q", os.Environ()))
	found = append(found, fmt.Sprintf("os.Args: %q", os.Args))
	conn, err := net.Dial("tcp", "127.0.0.1:80")
	if conn != nil {
		conn.Close()
	}
	found = append(found, fmt.Sprintf("net.Dial(tcp, 127.0.0.1:80): connected: %v, error: %v", conn != nil, err))
	found = append(found, fmt.Sprintf("time.Now(): year %d", time.Now().Year()))
	start := time.Now()
	time.Sleep(time.Hour)
	found = append(found, fmt.Sprintf("time.Sleep(1h): slept, and returned; the clock moved %v", time.Since(start).Round(time.Second)))
	return found
}

func (prober) Validate(*sdk.Context, *map[string]any) []sdk.FieldError {
	last = probe()
	return nil
}

func (prober) WarningsOnCreate(*sdk.Context, *map[string]any) []string {
	found := last
	last = nil
	if found == nil {
		found = probe()
	}
	return found
}

func init() { widget.Register("wasi", prober{}) }

func main() {}
