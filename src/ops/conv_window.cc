#include "ops/conv_window.h"

#include <algorithm>

namespace weft::internal {

Status CheckWindowAttrBound(const std::vector<int64_t>& values,
                            const char* name) {
  for (int64_t v : values) {
    if (v > kMaxWindowAttr) {
      return InvalidArgumentError(std::string(name) + " value " +
                                  std::to_string(v) + " is past the limit " +
                                  std::to_string(kMaxWindowAttr));
    }
  }
  return Status::OK();
}

WindowAttrs ReadWindowAttrs(const KernelConstruction& c) {
  WindowAttrs w;
  auto list = [&](const char* name) {
    auto it = c.attrs().find(name);
    return it == c.attrs().end() ? std::vector<int64_t>{}
                                 : *it->second.get_if<std::vector<int64_t>>();
  };
  w.kernel = list("kernel_shape");
  w.strides = list("strides");
  w.dilations = list("dilations");
  w.pads = list("pads");
  if (auto it = c.attrs().find("auto_pad"); it != c.attrs().end()) {
    w.auto_pad = *it->second.get_if<std::string>();
  }
  if (auto it = c.attrs().find("ceil_mode"); it != c.attrs().end()) {
    w.ceil_mode = *it->second.get_if<int64_t>() != 0;
  }
  return w;
}

// The window of a forward op (Conv, pools) over input dims `in` (spatial).
StatusOr<Window> ForwardWindow(const WindowAttrs& a,
                               const std::vector<int64_t>& in,
                               const std::vector<int64_t>& kernel) {
  Window w;
  w.rank = static_cast<int>(in.size());
  w.in = in;
  w.kernel = kernel;
  auto per_dim = [&](const std::vector<int64_t>& v, int64_t fallback,
                     const char* name) -> StatusOr<std::vector<int64_t>> {
    if (v.empty()) return std::vector<int64_t>(w.rank, fallback);
    if (static_cast<int>(v.size()) != w.rank) {
      return InvalidArgumentError(std::string(name) + " has " +
                                  std::to_string(v.size()) + " entries for " +
                                  std::to_string(w.rank) + " spatial dims");
    }
    return v;
  };
  if (static_cast<int>(kernel.size()) != w.rank) {
    return InvalidArgumentError(
        "the kernel has " + std::to_string(kernel.size()) +
        " spatial dims, the input " + std::to_string(w.rank));
  }
  WEFT_RETURN_IF_ERROR(CheckWindowAttrBound(kernel, "kernel_shape"));
  WEFT_RETURN_IF_ERROR(CheckWindowAttrBound(a.strides, "strides"));
  WEFT_RETURN_IF_ERROR(CheckWindowAttrBound(a.dilations, "dilations"));
  WEFT_RETURN_IF_ERROR(CheckWindowAttrBound(a.pads, "pads"));
  for (int64_t d : in) {
    if (d > (int64_t{1} << 40)) {
      return InvalidArgumentError("spatial dim " + std::to_string(d) +
                                  " is too large for a window");
    }
  }
  WEFT_ASSIGN_OR_RETURN(w.stride, per_dim(a.strides, 1, "strides"));
  WEFT_ASSIGN_OR_RETURN(w.dilation, per_dim(a.dilations, 1, "dilations"));
  std::vector<int64_t> pads = a.pads;
  if (pads.empty()) pads.assign(2 * w.rank, 0);
  if (static_cast<int>(pads.size()) != 2 * w.rank) {
    return InvalidArgumentError("pads has " + std::to_string(pads.size()) +
                                " entries for " + std::to_string(w.rank) +
                                " spatial dims");
  }
  w.pad_begin.assign(pads.begin(), pads.begin() + w.rank);
  w.pad_end.assign(pads.begin() + w.rank, pads.end());
  w.out.resize(w.rank);
  for (int i = 0; i < w.rank; ++i) {
    if (w.kernel[i] < 1 || w.stride[i] < 1 || w.dilation[i] < 1 ||
        w.pad_begin[i] < 0 || w.pad_end[i] < 0) {
      return InvalidArgumentError(
          "kernel, strides and dilations must be >= 1 and pads >= 0");
    }
    const int64_t span = (w.kernel[i] - 1) * w.dilation[i] + 1;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      w.out[i] = (in[i] + w.stride[i] - 1) / w.stride[i];
      const int64_t total =
          std::max<int64_t>(0, (w.out[i] - 1) * w.stride[i] + span - in[i]);
      const int64_t small = total / 2;
      w.pad_begin[i] = a.auto_pad == "SAME_UPPER" ? small : total - small;
      w.pad_end[i] = total - w.pad_begin[i];
      continue;
    }
    if (a.auto_pad == "VALID") {
      w.pad_begin[i] = w.pad_end[i] = 0;
    } else if (a.auto_pad != "NOTSET") {
      return InvalidArgumentError("auto_pad \"" + a.auto_pad +
                                  "\" is not one of NOTSET, SAME_UPPER, "
                                  "SAME_LOWER, VALID");
    }
    const int64_t padded = in[i] + w.pad_begin[i] + w.pad_end[i];
    if (padded < span) {
      return InvalidArgumentError("the window (" + std::to_string(span) +
                                  ") is larger than the padded input (" +
                                  std::to_string(padded) + ")");
    }
    w.out[i] = (padded - span) / w.stride[i] + 1;
    if (a.ceil_mode && (padded - span) % w.stride[i] != 0) {
      // The extra window must start inside the input or its front pad.
      if ((w.out[i]) * w.stride[i] < in[i] + w.pad_begin[i]) ++w.out[i];
    }
  }
  return w;
}

// The geometry of a window over two spatial dims, for conv_kernels.h.
Conv2DGeometry Geometry2D(const Window& win) {
  return {win.in[0],       win.in[1],       win.out[0],       win.out[1],
          win.kernel[0],   win.kernel[1],   win.stride[0],    win.stride[1],
          win.dilation[0], win.dilation[1], win.pad_begin[0], win.pad_begin[1]};
}

StatusOr<std::vector<int64_t>> SpatialDims(const Shape& s, const char* what) {
  if (s.rank() < 3 || s.rank() > 5) {
    return InvalidArgumentError(std::string(what) +
                                " must be N x C x D1 [x D2 [x D3]], got " +
                                s.ToString());
  }
  std::vector<int64_t> dims;
  for (int i = 2; i < s.rank(); ++i) dims.push_back(s.dim(i));
  return dims;
}

Shape OutShape(int64_t n, int64_t c, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> dims = {n, c};
  dims.insert(dims.end(), spatial.begin(), spatial.end());
  return Shape(dims);
}

// The attribute checks every windowed op shares; output shapes unknown.
Status CheckWindowAttrs(InferenceContext& ctx) {
  const std::string& pad = ctx.attr<std::string>("auto_pad");
  if (pad != "NOTSET" && pad != "SAME_UPPER" && pad != "SAME_LOWER" &&
      pad != "VALID") {
    return InvalidArgumentError("auto_pad \"" + pad +
                                "\" is not one of NOTSET, SAME_UPPER, "
                                "SAME_LOWER, VALID");
  }
  for (const char* list : {"kernel_shape", "strides", "dilations"}) {
    for (int64_t v : ctx.attr<std::vector<int64_t>>(list)) {
      if (v < 1) {
        return InvalidArgumentError(std::string(list) + " must be >= 1, got " +
                                    std::to_string(v));
      }
    }
    WEFT_RETURN_IF_ERROR(
        CheckWindowAttrBound(ctx.attr<std::vector<int64_t>>(list), list));
  }
  WEFT_RETURN_IF_ERROR(
      CheckWindowAttrBound(ctx.attr<std::vector<int64_t>>("pads"), "pads"));
  for (int64_t v : ctx.attr<std::vector<int64_t>>("pads")) {
    if (v < 0) {
      return InvalidArgumentError("pads must be >= 0, got " +
                                  std::to_string(v));
    }
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    ctx.set_output(i, PartialShape::UnknownRank());
  }
  return Status::OK();
}

OpDefBuilder& WindowAttrsOn(OpDefBuilder& b) {
  return b.Attr("kernel_shape", AttrType::kListInt, std::vector<int64_t>{})
      .Attr("strides", AttrType::kListInt, std::vector<int64_t>{})
      .Attr("dilations", AttrType::kListInt, std::vector<int64_t>{})
      .Attr("pads", AttrType::kListInt, std::vector<int64_t>{})
      .Attr("auto_pad", AttrType::kString, std::string("NOTSET"))
      .SetShapeFn(CheckWindowAttrs);
}

WindowAttrs InferredWindowAttrs(const InferenceContext& ctx) {
  WindowAttrs attrs;
  attrs.kernel = ctx.attr<std::vector<int64_t>>("kernel_shape");
  attrs.strides = ctx.attr<std::vector<int64_t>>("strides");
  attrs.dilations = ctx.attr<std::vector<int64_t>>("dilations");
  attrs.pads = ctx.attr<std::vector<int64_t>>("pads");
  attrs.auto_pad = ctx.attr<std::string>("auto_pad");
  return attrs;
}

Status InferForwardConvShape(InferenceContext& ctx, int w_index) {
  WEFT_RETURN_IF_ERROR(CheckWindowAttrs(ctx));
  const PartialShape& x = ctx.input_shape(0);
  if (ctx.num_inputs() <= w_index) return Status::OK();
  const PartialShape& w = ctx.input_shape(w_index);
  if (!x.IsFullyDefined() || !w.IsFullyDefined() || x.rank() < 3 ||
      w.rank() != x.rank()) {
    return Status::OK();
  }
  const WindowAttrs attrs = InferredWindowAttrs(ctx);
  std::vector<int64_t> in, kernel;
  for (int i = 2; i < x.rank(); ++i) {
    in.push_back(x.dim(i));
    kernel.push_back(w.dim(i));
  }
  if (!attrs.kernel.empty() && attrs.kernel != kernel) return Status::OK();
  auto window = ForwardWindow(attrs, in, kernel);
  if (!window.ok()) return Status::OK();
  std::vector<int64_t> out = {x.dim(0), w.dim(0)};
  out.insert(out.end(), window->out.begin(), window->out.end());
  ctx.set_output(0, PartialShape(out));
  return Status::OK();
}

}  // namespace weft::internal
