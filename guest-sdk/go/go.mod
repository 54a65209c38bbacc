module strategyhost.dev/sdk

go 1.24
