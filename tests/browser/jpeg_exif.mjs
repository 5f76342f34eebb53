// Makes a JPEG that a viewer must rotate: inserts an EXIF segment with the given Orientation tag
// (6 = rotate 90° clockwise to show upright) after the JFIF header. Test data for "boxes at the
// right place for any EXIF orientation", without committing another photo.

export function withExifOrientation(jpeg, orientation) {
  if (jpeg[0] !== 0xff || jpeg[1] !== 0xd8) throw new Error('not a JPEG');
  let cut = 2;
  if (jpeg[2] === 0xff && jpeg[3] === 0xe0) cut = 4 + jpeg.readUInt16BE(4);  // keep JFIF first
  const tiff = Buffer.alloc(26);
  tiff.write('MM', 0, 'latin1');  // big-endian TIFF
  tiff.writeUInt16BE(42, 2);
  tiff.writeUInt32BE(8, 4);  // first IFD right after the header
  tiff.writeUInt16BE(1, 8);  // one entry
  tiff.writeUInt16BE(0x0112, 10);  // Orientation
  tiff.writeUInt16BE(3, 12);  // SHORT
  tiff.writeUInt32BE(1, 14);  // one value
  tiff.writeUInt16BE(orientation, 18);
  tiff.writeUInt32BE(0, 22);  // no next IFD
  const payload = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff]);
  const header = Buffer.from([0xff, 0xe1, 0, 0]);
  header.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, cut), header, payload, jpeg.subarray(cut)]);
}
