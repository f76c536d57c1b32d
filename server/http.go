package server

import (
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// httpServer is the API's server, or, on nodes without the api role, a
// small one answering /healthz, /readyz and /metrics.
func (s *Server) httpServer() *fasthttp.Server {
	if s.api != nil {
		return s.api.Server()
	}
	metrics := fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	return &fasthttp.Server{
		Name: "relaybell",
		Handler: func(ctx *fasthttp.RequestCtx) {
			switch string(ctx.Path()) {
			case "/healthz", "/readyz":
				ctx.SetContentType("application/json")
				ctx.SetBodyString(`{"status":"ok"}`)
			case "/metrics":
				metrics(ctx)
			default:
				ctx.SetStatusCode(fasthttp.StatusNotFound)
			}
		},
	}
}
