module kvsim

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/ebitengine/purego v0.11.3
	github.com/go-echarts/go-echarts/v2 v2.6.7
	golang.org/x/sys v0.50.0
)
