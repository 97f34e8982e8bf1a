# gpufleet-controller image: a static binary on distroless, running as the
# image's non-root user (65532), with nothing else inside.
#
#   docker build --build-arg RUNTIME_IMAGE=<registry>/distroless/static:nonroot \
#     -t gpufleet-controller:dev .
#
# RUNTIME_IMAGE is the distroless "static:nonroot" base, named with the
# registry your builds pull from (the project names no registry host).
ARG RUNTIME_IMAGE
# Build stage: modules first so a source change reuses the download layer.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/gpufleet-controller/ cmd/gpufleet-controller/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
# The release the image is (make release stamps the binaries the same way).
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=$VERSION" -o /out/gpufleet-controller ./cmd/gpufleet-controller

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/gpufleet-controller /gpufleet-controller
USER 65532:65532
ENTRYPOINT ["/gpufleet-controller"]
