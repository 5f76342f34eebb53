#include "model/mogface/lfpn.h"

namespace mogserve::model::mogface {

at::Tensor UpsampleAdd(const at::Tensor& top, const at::Tensor& lateral) {
  const int64_t out_size[2] = {2 * top.size(2), 2 * top.size(3)};
  // Output size 2n without explicit scales: the kernel uses scale n / 2n = 0.5 exactly, as
  // F.upsample(scale_factor=2) does.
  at::Tensor up = at::upsample_bilinear2d(top, out_size, /*align_corners=*/false);
  up = up.narrow(2, 0, lateral.size(2)).narrow(3, 0, lateral.size(3));
  return lateral + up;
}

Lfpn Lfpn::Load(const CheckpointReader& r) {
  Lfpn n;
  n.c6_reduce_ = r.ConvBn("fpn.c6.0", "fpn.c6.1", 1, 0);
  n.c6_conv_ = r.ConvBn("fpn.c6.3", "fpn.c6.4", 2, 1);
  n.c7_reduce_ = r.ConvBn("fpn.c7.0", "fpn.c7.1", 1, 0);
  n.c7_conv_ = r.ConvBn("fpn.c7.3", "fpn.c7.4", 2, 1);
  n.c5_lat_ = r.Conv("fpn.c5_lat", 1, 1);
  n.c6_lat_ = r.Conv("fpn.c6_lat", 1, 1);
  n.c7_lat_ = r.Conv("fpn.c7_lat", 1, 1);
  n.ff_c5_c4_ = r.Conv("fpn.ff_c5_c4.main_conv", 1, 0);
  n.ff_c4_c3_ = r.Conv("fpn.ff_c4_c3.main_conv", 1, 0);
  n.ff_c3_c2_ = r.Conv("fpn.ff_c3_c2.main_conv", 1, 0);
  n.p4_lat_ = r.Conv("fpn.p4_lat", 1, 1);
  n.p3_lat_ = r.Conv("fpn.p3_lat", 1, 1);
  n.p2_lat_ = r.Conv("fpn.p2_lat", 1, 1);
  return n;
}

std::array<at::Tensor, kLevels> Lfpn::Forward(const std::array<at::Tensor, 4>& c) const {
  const at::Tensor c6 = c6_conv_.Forward(c6_reduce_.Forward(c[3]).relu_()).relu_();
  const at::Tensor c7 = c7_conv_.Forward(c7_reduce_.Forward(c6).relu_()).relu_();
  const at::Tensor p5 = c5_lat_.Forward(c[3]);
  // The top-down chain runs on the unsmoothed sums: T3 comes from T4, not P4.
  const at::Tensor t4 = UpsampleAdd(p5, ff_c5_c4_.Forward(c[2]));
  const at::Tensor t3 = UpsampleAdd(t4, ff_c4_c3_.Forward(c[1]));
  const at::Tensor t2 = UpsampleAdd(t3, ff_c3_c2_.Forward(c[0]));
  return {p2_lat_.Forward(t2), p3_lat_.Forward(t3), p4_lat_.Forward(t4), p5,
          c6_lat_.Forward(c6), c7_lat_.Forward(c7)};
}

int64_t Lfpn::Macs(const std::array<Size2, 4>& c, std::array<Size2, kLevels>* levels) const {
  const Size2 c6 = c6_conv_.OutSize(c[3]);
  const Size2 c7 = c7_conv_.OutSize(c6);
  int64_t macs = c6_reduce_.Macs(c[3]) + c6_conv_.Macs(c[3]) + c7_reduce_.Macs(c6) +
                 c7_conv_.Macs(c6) + c5_lat_.Macs(c[3]) + c6_lat_.Macs(c6) + c7_lat_.Macs(c7);
  macs += ff_c5_c4_.Macs(c[2]) + ff_c4_c3_.Macs(c[1]) + ff_c3_c2_.Macs(c[0]);
  macs += p4_lat_.Macs(c[2]) + p3_lat_.Macs(c[1]) + p2_lat_.Macs(c[0]);
  *levels = {c[0], c[1], c[2], c[3], c6, c7};
  return macs;
}

void Lfpn::Prepare(at::ScalarType dtype, bool channels_last) {
  for (Conv2d* conv : {&c6_reduce_, &c6_conv_, &c7_reduce_, &c7_conv_, &c5_lat_, &c6_lat_, &c7_lat_,
                       &ff_c5_c4_, &ff_c4_c3_, &ff_c3_c2_, &p4_lat_, &p3_lat_, &p2_lat_}) {
    conv->Prepare(dtype, channels_last);
  }
}

}  // namespace mogserve::model::mogface
