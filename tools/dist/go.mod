module github.com/relayr-go/relayr/tools/dist

go 1.26.0
