module strategyhost.dev/examples

go 1.24

require strategyhost.dev/sdk v0.0.0

replace strategyhost.dev/sdk => ../../guest-sdk/go
