module github.com/relayr-go/relayr/core

go 1.26.0
