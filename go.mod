module github.com/e86d9661/workerpool

go 1.25.0

require (
	github.com/gammazero/deque v1.2.1
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
