module github.com/relayr-go/relayr/adapters/plane

go 1.26
