// Columns of a 2-D convolution's products gathered from a padded,
// phase-split copy of the input (an implicit GEMM's operand).
//
// Im2ColPanels tests every (panel, tap) for the padding and for a panel that
// crosses an output row, and copies one panel row of mr pixels at a time. Here
// the input is first copied once per Run so that every tap of every output
// pixel lies at a fixed offset from that pixel's own position:
//
//   - each channel is zero-padded on all sides, so no tap needs a test;
//   - each padded channel is split into stride_h x stride_w phase planes
//     (phase (ry, rx) holds padded rows ry, ry + stride_h, ... and columns
//     rx, rx + stride_w, ...), so a strided window's taps read consecutive
//     floats too;
//   - output pixel (oy, ox) is at oy * cols + ox of a phase plane, and tap
//     (c, ky, kx) adds a fixed offset (PhaseTapOffsets).
//
// Then a panel row of the product's right operand (nr output pixels under one
// tap) is one vector load from the copy, or a few merged ones where the panel
// crosses an output row, and one store. The copy is about the size of the
// input, the panels about Taps() times it. Each output pixel reads the same
// input values as Im2Col2D gathers for it, so a product over these panels
// gives the same bits as one over Im2Col2D's columns packed the same way.
#ifndef WEFT_SRC_KERNELS_CONV_PHASE_PANELS_H_
#define WEFT_SRC_KERNELS_CONV_PHASE_PANELS_H_

#include <cstdint>

#include "kernels/conv_kernels.h"

namespace weft::internal {

// The panel widths GatherPhasePanels takes: at most one 16-float vector.
inline constexpr int64_t kMaxPhasePanelWidth = 16;

// Readable floats a phase copy needs before its first plane and after its
// last: a panel row loads whole vectors whose lanes outside the panel are
// discarded.
inline constexpr int64_t kPhaseCopySlack = kMaxPhasePanelWidth;

// The shape of one channel's phase planes for a geometry.
struct PhasePlanes {
  int64_t stride_h = 1, stride_w = 1;
  int64_t rows = 0, cols = 0;  // of each phase plane

  static PhasePlanes Of(const Conv2DGeometry& g);
  int64_t PlaneFloats() const { return rows * cols; }
  int64_t ChannelFloats() const { return stride_h * stride_w * PlaneFloats(); }
  // Floats of a copy of `channels` channels, slack on both sides included.
  int64_t BufferFloats(int64_t channels) const {
    return channels * ChannelFloats() + 2 * kPhaseCopySlack;
  }
};

// Writes one input channel (an in_h x in_w plane) as its phase planes into
// dst (ChannelFloats() floats), zeros where the padded position lies
// outside the input. Phases no tap reads (all but one for a 1 x 1 window
// with stride 2) are left unwritten: only lanes that are discarded load them.
void CopyIntoPhasePlanes(const Conv2DGeometry& g, const PhasePlanes& p,
                         const float* x, float* dst);

// offsets[c * Taps() + tap] = where tap `tap` (row-major over the window) of
// channel c reads, relative to an output pixel's position in a phase plane,
// for c < channels: the depth order of Im2Col2D's columns.
void PhaseTapOffsets(const Conv2DGeometry& g, const PhasePlanes& p,
                     int64_t channels, int64_t* offsets);

// Where GatherPhasePanels reads: `copy` is the first channel's phase planes,
// from CopyIntoPhasePlanes, with kPhaseCopySlack readable floats before it
// and after the last channel; `offsets` holds one tap offset per depth row
// read from it (PhaseTapOffsets). Depth rows past those hold `fill` in
// every pixel's lane: a row of ones times a column of biases in W adds the
// bias inside the product.
// `bounded`: `copy` has no slack (X itself, for a 1 x 1 window over every
// pixel, whose phase plane is the input plane): a panel of fewer than
// `width` pixels then reads only its own floats.
struct PhaseSource {
  const float* copy;
  const int64_t* offsets;
  int64_t rows;  // depth rows read from the copy
  float fill;    // the value of the rows after them
  bool bounded = false;
};

// Im2ColPanels' layout for the product's right side (depth x pixels, pixels
// as the panels' columns): output pixels [p0, p0 + pixels) in panels of
// `width` (<= kMaxPhasePanelWidth), depth blocks of `kc`, lanes past the
// last pixel zero; only depth blocks [first_block, end_block) are written.
void GatherPhasePanels(const Conv2DGeometry& g, const PhasePlanes& p,
                       const PhaseSource& source, int64_t depth, int64_t p0,
                       int64_t pixels, int64_t width, int64_t kc,
                       int64_t first_block, int64_t end_block, float* panels);

}  // namespace weft::internal

#endif  // WEFT_SRC_KERNELS_CONV_PHASE_PANELS_H_
