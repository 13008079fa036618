import NIOCore
import NIOHTTP2

/// Sends a request without a body as one HEADERS frame with END_STREAM, as curl and browsers do.
///
/// swift-nio-http2's HTTP/1-style codec turns the request's head into HEADERS and its end into an empty
/// DATA frame with END_STREAM: two frames (and TLS records) where one does. This handler, between the
/// codec and the stream, holds a HEADERS frame back until the next write or flush and folds an empty
/// final DATA frame into it.
final class HeadersEndStreamMerger: ChannelOutboundHandler {
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private var held: (headers: HTTP2Frame.FramePayload.Headers, promise: EventLoopPromise<Void>?)?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let payload = unwrapOutboundIn(data)
        if let (headers, headersPromise) = held {
            held = nil
            if case .data(let data) = payload, data.endStream, data.paddingBytes == nil,
                case .byteBuffer(let bytes) = data.data, bytes.readableBytes == 0
            {
                var merged = headers
                merged.endStream = true
                let written = promise ?? headersPromise
                if let promise, let headersPromise { promise.futureResult.cascade(to: headersPromise) }
                context.write(wrapOutboundOut(.headers(merged)), promise: written)
                return
            }
            context.write(wrapOutboundOut(.headers(headers)), promise: headersPromise)
        }
        if case .headers(let headers) = payload, !headers.endStream {
            held = (headers, promise)
            return
        }
        context.write(data, promise: promise)
    }

    func flush(context: ChannelHandlerContext) {
        if let (headers, promise) = held {
            held = nil
            context.write(wrapOutboundOut(.headers(headers)), promise: promise)
        }
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if let (_, promise) = held {
            held = nil
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
        context.close(mode: mode, promise: promise)
    }
}
