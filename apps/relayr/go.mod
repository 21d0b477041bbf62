module github.com/relayr-go/relayr/apps/relayr

go 1.26
