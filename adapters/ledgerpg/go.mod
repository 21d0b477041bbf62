module github.com/relayr-go/relayr/adapters/ledgerpg

go 1.26
